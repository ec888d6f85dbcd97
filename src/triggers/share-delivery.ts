/**
 * UNORDERED triggers: the topic read through a share group (the trigger's group id, as a share
 * group: docs/share-groups.md) instead of a consumer group, so invocations are not bound to
 * partitions: `key_lanes` workers per partition of the topic run at once in each delivering
 * process, each taking up to `batch_size` records under the share group's lock, invoking the
 * target with one event per partition, and answering the records as Lambda's partial batch
 * response says: Accept what succeeded, Release what failed (delivered again, its delivery count
 * raised), Reject what failed past MaximumRetryAttempts (archived by the share group, and copied to
 * its dead-letter topic when it has one). No lease: the share group's locks are what keep two
 * workers, here or in another process, from taking the same record.
 *
 * A worker that dies holding records leaves them to their lock's end (the share group's
 * `share.record.lock.duration.ms`, which should exceed the target's timeout), then they are
 * delivered again: at least once, in no particular order.
 */
import type { Clock } from '../clock.js';
import type { TopicRegistry } from '../topics/topics.js';
import type { DecodedRecord } from '../wire/record-batch.js';
import { kafkaEventJson, MAX_EVENT_BYTES, partitionKey, type EventBatch } from './kafka-event.js';
import type { Invoke, TargetFactory } from './targets.js';
import { deliveryKnobs, type TriggerDefinition } from './trigger.js';
import type { TriggerRegistry } from './trigger-registry.js';

/** A record taken from the share group under a lock, with its delivery count (1 on the first delivery). */
export interface SharedRecord {
  topic: string;
  partition: number;
  record: DecodedRecord;
  deliveries: number;
}

export type SharedAnswer = 'accept' | 'release' | 'reject';

/** The share group operations a delivery needs: what ShareGroups (src/share) offers. */
export interface ShareQueue {
  acquire(group: string, topics: readonly string[], member: string, maxRecords: number): Promise<SharedRecord[]>;
  acknowledge(
    group: string,
    member: string,
    acks: readonly { topic: string; partition: number; offset: number; type: SharedAnswer }[],
  ): Promise<unknown[]>;
  config(group: string): Promise<{ autoOffsetReset: string }>;
  alterConfigs(group: string, changes: readonly { name: string; value: string | null }[]): Promise<void>;
}

export interface SharedDeliveryDeps {
  registry: TriggerRegistry;
  topics: TopicRegistry;
  clock: Clock;
  targets: TargetFactory;
  bootstrapServers: string;
  processId: string;
  retryBackoff: { baseMs: number; maxMs: number };
  onError: (msg: string, fields: Record<string, unknown>) => void;
}

const AUTO_OFFSET_RESET = 'share.auto.offset.reset';
/** Empty acquisitions in a row before a worker ends, and the pause after each (times its count). */
const EMPTY_LOOKS = 3;
const EMPTY_PAUSE_MS = 50;
/** How far before the start a share-partition first read later may begin (see `startAt`). */
const START_SLACK_S = 60;

interface Run {
  more: boolean;
  done: Promise<void>;
  /** Starts workers up to the trigger's lanes (set once the pool is ready). */
  topUp?: () => void;
}

/** The UNORDERED triggers' workers of this process, one pool per trigger while it has records. */
export class SharedDeliveries {
  private readonly runs = new Map<string, Run>();

  constructor(
    private readonly deps: SharedDeliveryDeps,
    private readonly share: ShareQueue | undefined,
    /** The runner's: closing, or past a scheduled turn's deadline (workers stop after the batch in hand). */
    private readonly stopped: () => boolean,
  ) {}

  /** Records may be there: start the trigger's workers, or have the running pool look again (and fill up). */
  wake(d: TriggerDefinition): void {
    if (this.stopped()) return;
    const running = this.runs.get(d.name);
    if (running) {
      running.more = true;
      running.topUp?.();
      return;
    }
    const share = this.share;
    if (!share) {
      this.deps.onError('trigger delivery failed', { trigger: d.name, error: 'share groups are not served here' });
      return;
    }
    const run: Run = { more: false, done: Promise.resolve() };
    this.runs.set(d.name, run);
    run.done = this.pool(share, d, run)
      .catch((e: unknown) => this.deps.onError('trigger delivery failed', { trigger: d.name, error: String(e) }))
      .finally(() => {
        this.runs.delete(d.name);
        if (run.more && !this.stopped()) this.wake(d);
      });
  }

  async idle(): Promise<void> {
    while (this.runs.size > 0) await Promise.allSettled([...this.runs.values()].map((r) => r.done));
  }

  /**
   * Up to `key_lanes` workers per partition; a worker ends when the share group has nothing
   * available for it, and a wake (a commit) starts workers again up to the lanes.
   */
  private async pool(share: ShareQueue, d: TriggerDefinition, run: Run): Promise<void> {
    const topic = await this.deps.topics.get(d.topic);
    await this.startAt(share, d);
    const lanes = deliveryKnobs(d).keyLanes * topic.partitionCount;
    const invoke = this.deps.targets(d.target);
    const workers = new Set<Promise<void>>();
    let started = 0;
    run.topUp = () => {
      while (workers.size < lanes && !this.stopped()) {
        const member = `${this.deps.processId}/${d.name}/${started++}`;
        const w: Promise<void> = this.worker(share, d, invoke, topic.config.logAppendTime, member, run)
          .catch((e: unknown) => this.deps.onError('trigger delivery failed', { trigger: d.name, error: String(e) }))
          .finally(() => workers.delete(w));
        workers.add(w);
      }
    };
    run.topUp();
    while (workers.size > 0) await Promise.allSettled([...workers]);
  }

  /**
   * The trigger's starting position as the share group's share.auto.offset.reset, while that is
   * the default (latest): otherwise a share-partition would start at the high watermark of its
   * first read, after the commit that woke it. TRIM_HORIZON is earliest. LATEST and AT_TIMESTAMP
   * are a by_duration back to the trigger's creation or the timestamp, plus START_SLACK_S: Kafka's
   * by_duration counts back from each share-partition's first read, which may come later than
   * this write, and delivering a record from just before the start beats skipping one after it.
   */
  private async startAt(share: ShareQueue, d: TriggerDefinition): Promise<void> {
    if ((await share.config(d.groupId)).autoOffsetReset !== 'latest') return;
    if (d.startingPosition === 'TRIM_HORIZON')
      return share.alterConfigs(d.groupId, [{ name: AUTO_OFFSET_RESET, value: 'earliest' }]);
    const since = d.startingPosition === 'AT_TIMESTAMP' ? (d.startingTimestamp ?? d.createdAt) : d.createdAt;
    const seconds = Math.max(0, Math.ceil((this.deps.clock.now() - since) / 1000)) + START_SLACK_S;
    await share.alterConfigs(d.groupId, [{ name: AUTO_OFFSET_RESET, value: `by_duration:PT${seconds}S` }]);
  }

  /** Takes batches until the share group has none available (or the trigger stops being ENABLED). */
  private async worker(
    share: ShareQueue,
    d: TriggerDefinition,
    invoke: Invoke,
    logAppendTime: boolean,
    member: string,
    run: Run,
  ): Promise<void> {
    const knobs = deliveryKnobs(d);
    let empty = 0;
    for (;;) {
      if (this.stopped()) return;
      const current = await this.deps.registry.get(d.name).catch(() => undefined);
      if (current?.state !== 'ENABLED') return;
      const got = await share.acquire(d.groupId, [d.topic], member, knobs.batchSize);
      if (got.length === 0) {
        if (run.more) {
          run.more = false;
          empty = 0;
          continue;
        }
        // Nothing may mean share-partitions other workers were writing (an acquisition skips a
        // contended one): look again a few times before ending, or the pool shrinks to one
        // worker per share-partition item while records wait.
        if (++empty >= EMPTY_LOOKS) return;
        await sleep(EMPTY_PAUSE_MS * empty);
        continue;
      }
      empty = 0;
      const byPartition = new Map<number, SharedRecord[]>();
      for (const r of got) byPartition.set(r.partition, [...(byPartition.get(r.partition) ?? []), r]);
      const answers = (
        await Promise.all(
          [...byPartition].map(([partition, records]) =>
            this.deliver(invoke, { topic: d.topic, partition, logAppendTime }, records, knobs),
          ),
        )
      ).flat();
      const failed = answers.filter((a) => a.type !== 'accept');
      // A failing target is not hit again at once: the released records wait out a back-off (within their lock).
      if (failed.length > 0) await sleep(backoff(Math.max(...failed.map((a) => a.deliveries)), this.deps.retryBackoff));
      await share.acknowledge(
        d.groupId,
        member,
        answers.map(({ topic, partition, offset, type }) => ({ topic, partition, offset, type })),
      );
    }
  }

  /** One partition's records: invoked in events under the payload cap, each answered on its own. */
  private async deliver(
    invoke: Invoke,
    batch: Omit<EventBatch, 'records'>,
    records: SharedRecord[],
    knobs: ReturnType<typeof deliveryKnobs>,
  ): Promise<(SharedRecord & { offset: number; type: SharedAnswer })[]> {
    const event = kafkaEventJson(this.deps.bootstrapServers, { ...batch, records: records.map((r) => r.record) });
    if (event.byteLength > MAX_EVENT_BYTES && records.length > 1) {
      const half = Math.ceil(records.length / 2);
      return [
        ...(await this.deliver(invoke, batch, records.slice(0, half), knobs)),
        ...(await this.deliver(invoke, batch, records.slice(half), knobs)),
      ];
    }
    // One record alone over the cap can never be invoked with: a failure, given up on past the retries.
    const outcome =
      event.byteLength > MAX_EVENT_BYTES
        ? { ok: false as const, error: 'over the payload cap' }
        : await invoke(event).catch((e: unknown) => ({ ok: false as const, error: String(e) }));
    const failedOffsets = outcome.ok
      ? knobs.reportBatchItemFailures
        ? itemFailures(outcome.response, partitionKey(batch.topic, batch.partition), records)
        : new Set<number>()
      : 'all';
    return records.map((r) => {
      const failed = failedOffsets === 'all' || failedOffsets.has(r.record.offset);
      // MaximumRetryAttempts counts retries: the first delivery is not one.
      const exhausted = knobs.maximumRetryAttempts >= 0 && r.deliveries > knobs.maximumRetryAttempts;
      const type: SharedAnswer = !failed ? 'accept' : exhausted ? 'reject' : 'release';
      return { ...r, offset: r.record.offset, type };
    });
  }
}

/**
 * The offsets a partial batch response names (Lambda's `batchItemFailures`), each failing on its
 * own: records are not ordered here, so those after a failure are not held back. A response it
 * can not read as failures of this batch fails the whole batch, as Lambda does.
 */
export function itemFailures(response: unknown, key: string, records: readonly SharedRecord[]): Set<number> | 'all' {
  if (response === undefined || response === null) return new Set();
  if (typeof response !== 'object' || Array.isArray(response)) return 'all';
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return new Set();
  if (!Array.isArray(failures)) return 'all';
  const inBatch = new Set(records.map((r) => r.record.offset));
  const out = new Set<number>();
  for (const f of failures) {
    const id = (f as { itemIdentifier?: { partition?: unknown; offset?: unknown } } | null)?.itemIdentifier;
    if (typeof id !== 'object' || id === null) return 'all';
    const offset = typeof id.offset === 'string' && /^\d+$/.test(id.offset) ? Number(id.offset) : id.offset;
    if (id.partition !== key || typeof offset !== 'number' || !inBatch.has(offset)) return 'all';
    out.add(offset);
  }
  return out;
}

const backoff = (attempt: number, { baseMs, maxMs }: { baseMs: number; maxMs: number }) =>
  Math.random() * Math.min(maxMs, baseMs * 2 ** (attempt - 1));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
