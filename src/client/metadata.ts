import { KafkaClientError } from './errors.js';
import { retry } from './retry.js';
import { enc, type Transport } from './transport.js';

/**
 * The producer's view of topic metadata (Kafka's metadata cache): partition counts, refreshed after
 * metadata.max.age.ms or when a request says the view is stale. Concurrent lookups share one request.
 */
export class Metadata {
  private readonly counts = new Map<string, { count: number; at: number }>();
  private readonly pending = new Map<string, Promise<number>>();

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

  invalidate(topic: string): void {
    this.counts.delete(topic);
  }
}
