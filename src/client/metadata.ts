import { KafkaClientError } from './errors.js';
import { allPages, type Page } from './pages.js';
import { retry } from './retry.js';
import { enc, type Transport } from './transport.js';

/** Where a partition's appends are written: its leader's store, and with acks=all every in-sync replica's. */
export interface Placement {
  leader: number;
  isr: number[];
  /** The leader's epoch (unknown from a server that does not say it). */
  leaderEpoch?: number;
}

/** A partition as the partitions list shows it (the fields the placements take). */
interface WirePartition {
  partition_id: number;
  leader_id: number;
  isr: number[];
  leader_epoch?: number;
}

/**
 * The producer's view of topic metadata (Kafka's metadata cache): partition counts, and the
 * partitions' leaders and in-sync replicas, refreshed after metadata.max.age.ms or when a request
 * says the view is stale; a produce answer's placement (KIP-951's current leader, with the ISR)
 * replaces a partition's older one at once. Concurrent lookups share one request.
 */
export class Metadata {
  private readonly counts = new Map<string, { count: number; at: number }>();
  private readonly pending = new Map<string, Promise<number>>();
  /** Per topic, its partitions' placements as last read (empty after a failed read, until the backoff). */
  private readonly placements = new Map<string, { at: number; failed: boolean; partitions: Map<number, Placement> }>();
  private readonly placing = new Set<string>();

  constructor(
    private readonly transport: Transport,
    private readonly maxAgeMs = 300_000,
    private readonly retryBackoff = { initialMs: 100, maxMs: 1000 },
  ) {}

  /** The cached partition count if fresh (lets a send append without yielding, keeping order). */
  cached(topic: string, now = Date.now()): number | undefined {
    const c = this.counts.get(topic);
    return c && now - c.at < this.maxAgeMs ? c.count : undefined;
  }

  /** Fetches the partition count; an unknown topic fails at once (there is no auto-creation). */
  partitionCount(topic: string, deadline = Date.now() + 60_000): Promise<number> {
    const fresh = this.cached(topic);
    if (fresh !== undefined) return Promise.resolve(fresh);
    let p = this.pending.get(topic);
    if (!p) {
      // The leaders beside the count (as Kafka's one Metadata request answers both), so the first
      // requests are already grouped by them.
      if (!this.placements.has(topic)) this.readPlacements(topic);
      p = retry(
        async () => {
          const res = await this.transport.request<{ partitions_count: number }>('GET', `/topics/${enc(topic)}`, {
            topic,
          });
          return res.body.partitions_count;
        },
        {
          retries: Number.MAX_SAFE_INTEGER,
          deadline,
          initialBackoffMs: this.retryBackoff.initialMs,
          maxBackoffMs: this.retryBackoff.maxMs,
          retryIf: (e) => e instanceof KafkaClientError && e.retriable && e.type !== 'UNKNOWN_TOPIC_OR_PARTITION',
        },
      ).then(
        (count) => {
          this.counts.set(topic, { count, at: Date.now() });
          this.pending.delete(topic);
          return count;
        },
        (e) => {
          this.pending.delete(topic);
          throw e;
        },
      );
      this.pending.set(topic, p);
    }
    return p;
  }

  /**
   * The partition's leader and ISR as last read, without waiting: unknown (or old), it is read in
   * the background (the topic's partitions list) and undefined is answered meanwhile.
   */
  placement(topic: string, partition: number, now = Date.now()): Placement | undefined {
    const known = this.placements.get(topic);
    const age = known ? now - known.at : Infinity;
    if (age >= (known?.failed ? this.retryBackoff.maxMs : this.maxAgeMs)) this.readPlacements(topic);
    return known?.partitions.get(partition);
  }

  /**
   * A produce answer's placement of a partition (the server elects a leader inside a request when
   * the leader's store fails, and answers without an error): taken when its leader epoch is newer
   * than the one known, or the same epoch with another ISR (an acks=all request's stores). An older
   * epoch is a stale answer and changes nothing. Before the topic's first read, the read decides.
   */
  placementSeen(topic: string, partition: number, seen: Placement): void {
    const known = this.placements.get(topic);
    if (!known || seen.leaderEpoch === undefined) return;
    const was = known.partitions.get(partition);
    const epoch = was?.leaderEpoch ?? -1;
    if (seen.leaderEpoch < epoch) return;
    if (
      was &&
      seen.leaderEpoch === epoch &&
      seen.leader === was.leader &&
      seen.isr.length === was.isr.length &&
      seen.isr.every((r, i) => r === was.isr[i])
    )
      return;
    known.partitions.set(partition, { leader: seen.leader, isr: [...seen.isr], leaderEpoch: seen.leaderEpoch });
  }

  /** A leader moved or the ISR changed (NOT_LEADER_OR_FOLLOWER and the like): read the placements again. */
  invalidatePlacement(topic: string): void {
    const known = this.placements.get(topic);
    if (known) known.at = -Infinity;
  }

  private readPlacements(topic: string): void {
    if (this.placing.has(topic)) return;
    this.placing.add(topic);
    allPages<WirePartition>(
      `/topics/${enc(topic)}/partitions`,
      async (at) => (await this.transport.request<Page<WirePartition>>('GET', at, { topic })).body,
    )
      .then(
        (list) => ({
          failed: false,
          partitions: new Map(
            list.map((p): [number, Placement] => [
              p.partition_id,
              {
                leader: p.leader_id,
                isr: p.isr,
                ...(typeof p.leader_epoch === 'number' ? { leaderEpoch: p.leader_epoch } : {}),
              },
            ]),
          ),
        }),
        // Unknown, requests go out as if every partition were in one place (as before the read).
        () => ({ failed: true, partitions: this.placements.get(topic)?.partitions ?? new Map<number, Placement>() }),
      )
      .then((read) => {
        this.placements.set(topic, { at: Date.now(), ...read });
        this.placing.delete(topic);
      });
  }

  invalidate(topic: string): void {
    this.counts.delete(topic);
    this.invalidatePlacement(topic);
  }
}
