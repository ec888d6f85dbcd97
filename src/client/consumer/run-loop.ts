/**
 * kafkajs's run() over poll(): hands each poll's records to eachMessage or eachBatch, partition by
 * partition. Records not processed (a handler threw, the consumer stopped, the partition was
 * paused) are handed out again: their partition's position goes back to the first of them, so
 * neither a commit nor the next owner skips them.
 */
import type { ConsumerRecord } from '../codec.js';
import { KafkaClientError } from '../errors.js';
import { sleep } from '../retry.js';
import { tpKey, type TopicPartitionState } from './subscription-state.js';

export interface EachMessagePayload {
  topic: string;
  partition: number;
  message: ConsumerRecord;
  heartbeat(): Promise<void>;
  /** Pauses this partition; the returned function resumes it. */
  pause(): () => void;
}

export interface Batch {
  topic: string;
  partition: number;
  highWatermark: number | undefined;
  messages: ConsumerRecord[];
  isEmpty(): boolean;
  firstOffset(): number | null;
  lastOffset(): number;
}

export interface EachBatchPayload {
  batch: Batch;
  /** Marks records up to and including `offset` as processed. */
  resolveOffset(offset: number): void;
  heartbeat(): Promise<void>;
  /** Commits processed offsets if auto commit is due. */
  commitOffsetsIfNecessary(): Promise<void>;
  isRunning(): boolean;
  /** Whether the partition was revoked or sought meanwhile: stop processing this batch. */
  isStale(): boolean;
  pause(): () => void;
}

export interface ConsumerRunConfig {
  eachMessage?: (payload: EachMessagePayload) => Promise<void>;
  eachBatch?: (payload: EachBatchPayload) => Promise<void>;
  /** Resolve every record of a batch when eachBatch returns (default true). */
  eachBatchAutoResolve?: boolean;
  /** Called when the loop stops on a non-retriable error (after which the consumer is stopped). */
  onCrash?: (e: Error) => void;
}

/** What the loop needs from the consumer. */
export interface RunnableConsumer {
  poll(): Promise<ConsumerRecord[]>;
  isRunning(): boolean;
  stopRunning(): void;
  /** The partition's state while assigned (undefined once revoked). */
  partition(topic: string, partition: number): TopicPartitionState | undefined;
  pause(topic: string, partition: number): void;
  resume(topic: string, partition: number): void;
  heartbeat(): Promise<void>;
  commitIfDue(): Promise<void>;
  log(level: 'warn' | 'error', message: string, extra?: Record<string, unknown>): void;
  backoff(attempt: number): number;
}

type Tracked = ConsumerRecord & { handled?: boolean };

export async function runLoop(c: RunnableConsumer, config: ConsumerRunConfig): Promise<void> {
  let failures = 0;
  while (c.isRunning()) {
    let records: ConsumerRecord[];
    try {
      records = await c.poll();
    } catch (e) {
      if (!c.isRunning()) break;
      const err = e instanceof Error ? e : new Error(String(e));
      if (e instanceof KafkaClientError && e.retriable) {
        await sleep(c.backoff(failures++));
        continue;
      }
      c.stopRunning();
      if (config.onCrash) config.onCrash(err);
      else c.log('error', 'consumer stopped', { error: String(err) });
      break;
    }
    failures = 0;
    const batches = groupByPartition(records);
    for (let i = 0; i < batches.length; i++) {
      if (c.isRunning() && (await processBatch(c, batches[i]!, config))) continue;
      for (const b of batches.slice(i)) {
        const first = b.find((r) => !r.handled);
        const s = c.partition(b[0]!.topic, b[0]!.partition);
        if (first && s) s.seek(first.offset);
      }
      break;
    }
  }
}

/** Processes one partition's records; false when it stopped early (error, stop, pause). */
async function processBatch(c: RunnableConsumer, records: Tracked[], config: ConsumerRunConfig): Promise<boolean> {
  const { topic, partition } = records[0]!;
  const s = c.partition(topic, partition);
  if (!s) return true; // revoked meanwhile: its records go to the new owner
  const epoch = s.epoch;
  const stale = () => c.partition(topic, partition) !== s || s.epoch !== epoch;
  const pause = () => {
    c.pause(topic, partition);
    return () => c.resume(topic, partition);
  };
  try {
    if (config.eachBatch) {
      await config.eachBatch({
        batch: {
          topic,
          partition,
          highWatermark: s.highWatermark,
          messages: records,
          isEmpty: () => records.length === 0,
          firstOffset: () => records[0]?.offset ?? null,
          lastOffset: () => records.at(-1)!.offset,
        },
        resolveOffset: (offset) => {
          for (const r of records) if (r.offset <= offset) r.handled = true;
        },
        heartbeat: () => c.heartbeat(),
        commitOffsetsIfNecessary: () => c.commitIfDue(),
        isRunning: () => c.isRunning(),
        isStale: stale,
        pause,
      });
      if (config.eachBatchAutoResolve ?? true) for (const r of records) r.handled = true;
      return stale() || (records.every((r) => r.handled) && !s.paused);
    }
    for (const r of records) {
      if (!c.isRunning() || stale() || s.paused) return stale();
      await config.eachMessage!({ topic, partition, message: r, heartbeat: () => c.heartbeat(), pause });
      r.handled = true;
    }
    return true;
  } catch (e) {
    c.log('error', `processing ${topic}-${partition} failed; the records are redelivered`, { error: String(e) });
    if (!stale()) await sleep(c.backoff(0));
    return stale();
  }
}

function groupByPartition(records: ConsumerRecord[]): Tracked[][] {
  const out = new Map<string, Tracked[]>();
  for (const r of records) {
    const k = tpKey(r.topic, r.partition);
    let list = out.get(k);
    if (!list) out.set(k, (list = []));
    list.push(r);
  }
  return [...out.values()];
}
