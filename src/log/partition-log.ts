import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import { KafkaError } from '../errors.js';
import type { MetadataStore, ObjectStore } from '../storage/ports.js';
import { OffsetIndex } from './offset-index.js';
import { commitToPartition, readPartitionState, type PendingCommit } from './partition-commit.js';
import { partitionPk, STATE_SK, type CommitRecord, type PartitionState } from './partition-state.js';
import { decodeRecordBatches, encodeRecordBatch, type DecodedRecord, type LogRecord } from './record-batch.js';
import { checkRecordSize, chunkRecords } from './record-size.js';
import type { Topic, TopicMeta } from './topics.js';

export interface PartitionAppend {
  partition: number;
  records: LogRecord[];
}

/** Kafka's LogAppendInfo, reduced to what a producer is told. */
export interface AppendInfo {
  partition: number;
  baseOffset: number;
  lastOffset: number;
  /** The broker's append time when the topic uses LogAppendTime, else -1 (as Kafka answers). */
  logAppendTime: number;
  logStartOffset: number;
}

export type AppendOutcome = { ok: true; info: AppendInfo } | { ok: false; error: KafkaError };

export interface FetchResult {
  records: DecodedRecord[];
  /** The offset to fetch next: one past the last record returned, or the requested offset. */
  nextOffset: number;
  highWatermark: number;
  logStartOffset: number;
  /** Bytes of record batches read to answer (Kafka's fetch size accounting). */
  bytes: number;
}

export type OffsetSpec = 'earliest' | 'latest' | { timestamp: number };

export interface LogDeps {
  metadata: MetadataStore;
  /** The replica stores; a partition's replicas are indexes into this list. */
  stores: ObjectStore[];
  clock: Clock;
}

/**
 * The partitioned log: appends (DESIGN.md commit protocol), reads by offset, list-offsets. One
 * produce request becomes one object per replica store holding every touched partition's batches.
 */
export class PartitionLog {
  readonly index: OffsetIndex;
  /** Per-partition tail of in-process commits, so this process's writers queue instead of racing. */
  private readonly commitQueues = new Map<string, Promise<unknown>>();
  /** The newest base offset per partition whose index entry this process wrote. */
  private readonly indexed = new Map<string, number>();
  private readonly listeners = new Set<(topic: string, partition: number) => void>();

  constructor(private readonly deps: LogDeps) {
    this.index = new OffsetIndex(deps.metadata);
  }

  /** Called after every successful append (the purgatory's checkAndComplete hook). */
  onAppend(listener: (topic: string, partition: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async state(topic: TopicMeta, partition: number): Promise<PartitionState> {
    this.checkPartition(topic, partition);
    return (await readPartitionState(this.deps.metadata, topic, partition, this.deps.stores.length)).state;
  }

  /**
   * Appends each partition's records, answering per partition (Kafka's produce answers per
   * partition; one partition failing does not fail the others).
   */
  async append(topic: Topic, appends: PartitionAppend[]): Promise<Map<number, AppendOutcome>> {
    const now = this.deps.clock.now();
    const outcomes = new Map<number, AppendOutcome>();
    const parts: { partition: number; bytes: Uint8Array[]; pending: Omit<PendingCommit, 'objectKey' | 'start' | 'end' | 'stores'> }[] = [];
    for (const { partition, records } of appends) {
      try {
        this.checkPartition(topic, partition);
        if (records.length === 0) throw new KafkaError('INVALID_RECORD', 'A produce request for a partition must hold at least one record');
        for (const r of records) checkRecordSize(r, topic.config.maxMessageBytes);
        const stamped = topic.config.logAppendTime ? records.map((r) => ({ ...r, timestamp: now })) : records;
        let relative = 0;
        let maxTimestamp = -1;
        const bytes: Uint8Array[] = [];
        for (const chunk of chunkRecords(stamped, topic.config.maxMessageBytes)) {
          bytes.push(encodeRecordBatch(chunk, { baseOffset: relative, logAppendTime: topic.config.logAppendTime }));
          relative += chunk.length;
          for (const r of chunk) if (r.timestamp > maxTimestamp) maxTimestamp = r.timestamp;
        }
        parts.push({ partition, bytes, pending: { recordCount: relative, maxTimestamp } });
      } catch (e) {
        outcomes.set(partition, { ok: false, error: asKafkaError(e) });
      }
    }
    if (parts.length === 0) return outcomes;

    // One object for the whole request: the partitions' batch runs laid end to end.
    const total = parts.reduce((n, p) => n + p.bytes.reduce((m, b) => m + b.byteLength, 0), 0);
    const body = new Uint8Array(total);
    const ranges = new Map<number, { start: number; end: number }>();
    let pos = 0;
    for (const p of parts) {
      const start = pos;
      for (const b of p.bytes) {
        body.set(b, pos);
        pos += b.byteLength;
      }
      ranges.set(p.partition, { start, end: pos });
    }
    const objectKey = newObjectKey(topic.id, now);
    const storeIds = [...new Set(parts.flatMap((p) => this.replicasOf(topic, p.partition)))];
    try {
      await Promise.all(storeIds.map((s) => this.store(s).put(objectKey, body)));
    } catch (e) {
      // Nothing is committed, so nothing is lost: the producer may retry. A partly written object is an orphan.
      for (const p of parts) outcomes.set(p.partition, { ok: false, error: asKafkaError(e) });
      return outcomes;
    }

    await Promise.all(
      parts.map(async (p) => {
        try {
          const { start, end } = ranges.get(p.partition)!;
          const result = await this.serialized(partitionPk(topic.name, p.partition), () =>
            commitToPartition(
              { metadata: this.deps.metadata, index: this.index, storeCount: this.deps.stores.length, isIndexed: this.isIndexed },
              topic,
              p.partition,
              { ...p.pending, objectKey, start, end, stores: this.replicasOf(topic, p.partition) },
            ),
          );
          if (result.indexed) this.indexed.set(partitionPk(topic.name, p.partition), result.entry.baseOffset);
          outcomes.set(p.partition, {
            ok: true,
            info: {
              partition: p.partition,
              baseOffset: result.entry.baseOffset,
              lastOffset: result.entry.lastOffset,
              logAppendTime: topic.config.logAppendTime ? now : -1,
              logStartOffset: result.state.logStartOffset,
            },
          });
          for (const l of this.listeners) l(topic.name, p.partition);
        } catch (e) {
          outcomes.set(p.partition, { ok: false, error: asKafkaError(e) });
        }
      }),
    );
    return outcomes;
  }

  /**
   * Records from `offset` up to the high watermark, about `maxBytes` of batches (at least one
   * batch, so a consumer always progresses). Offsets outside [logStartOffset, HW] are
   * OFFSET_OUT_OF_RANGE, as in Kafka; offset = HW answers empty.
   */
  async read(topic: TopicMeta, partition: number, offset: number, maxBytes: number): Promise<FetchResult> {
    const state = await this.state(topic, partition);
    const hw = state.highWatermark;
    if (!Number.isSafeInteger(offset) || offset < state.logStartOffset || offset > hw) {
      throw new KafkaError(
        'OFFSET_OUT_OF_RANGE',
        `Offset ${offset} is out of range for ${topic.name}-${partition}: the log holds [${state.logStartOffset}, ${hw})`,
      );
    }
    const empty = { records: [], nextOffset: offset, highWatermark: hw, logStartOffset: state.logStartOffset, bytes: 0 };
    if (offset === hw) return empty;
    const entries = await this.index.entriesFrom(topic.name, partition, state, offset, hw, maxBytes);
    const records: DecodedRecord[] = [];
    let bytes = 0;
    for (const { entry, data } of await this.load(state, entries)) {
      bytes += data.byteLength;
      for (const batch of decodeRecordBatches(data)) {
        for (const r of batch.records) {
          const abs = entry.baseOffset + r.offset;
          if (abs >= offset && abs < hw) records.push({ ...r, offset: abs });
        }
      }
    }
    const nextOffset = records.length > 0 ? records.at(-1)!.offset + 1 : offset;
    return { ...empty, records, nextOffset, bytes };
  }

  /**
   * Kafka's ListOffsets: earliest = log start offset, latest = high watermark, by timestamp = the
   * first offset whose timestamp is >= t (offset -1 when there is none, as Kafka answers).
   */
  async listOffset(topic: TopicMeta, partition: number, spec: OffsetSpec): Promise<{ offset: number; timestamp: number }> {
    const state = await this.state(topic, partition);
    if (spec === 'earliest') return { offset: state.logStartOffset, timestamp: -1 };
    if (spec === 'latest') return { offset: state.highWatermark, timestamp: -1 };
    const t = spec.timestamp;
    for await (const entry of this.index.scan(topic.name, partition, topic.id, state.logStartOffset, state.highWatermark)) {
      if (entry.maxTimestamp < t) continue;
      const [loaded] = await this.load(state, [entry]);
      for (const batch of decodeRecordBatches(loaded!.data)) {
        for (const r of batch.records) {
          const abs = entry.baseOffset + r.offset;
          if (r.timestamp >= t && abs >= state.logStartOffset && abs < state.highWatermark) return { offset: abs, timestamp: r.timestamp };
        }
      }
    }
    return { offset: -1, timestamp: -1 };
  }

  /**
   * Removes a deleted topic's partition states, index entries and objects. Readers already ignore
   * them (they carry the old topic id), so this may be interrupted and redone at any time.
   */
  async purge(topic: TopicMeta): Promise<void> {
    for (let p = 0; p < topic.partitionCount; p++) {
      const pk = partitionPk(topic.name, p);
      for (;;) {
        const items = await this.deps.metadata.query<CommitRecord>(pk, { beginsWith: 'idx#', limit: 100 });
        const own = items.filter((i) => i.value.topicId === topic.id);
        await Promise.all(own.map((i) => this.deps.metadata.delete(pk, i.sk)));
        if (items.length < 100 || own.length === 0) break;
      }
      const state = await this.deps.metadata.get<PartitionState>(pk, STATE_SK);
      if (state?.value.topicId === topic.id) await this.deps.metadata.delete(pk, STATE_SK, { ifVersion: state.version }).catch(() => {});
      this.indexed.delete(pk);
    }
    await Promise.all(
      this.deps.stores.map(async (store) => {
        for (;;) {
          const page = await store.list(`data/${topic.id}/`);
          await store.delete(page.objects.map((o) => o.key));
          if (!page.nextStartAfter) return;
        }
      }),
    );
  }

  /** Reads the byte ranges of index entries, one GET per run of adjacent ranges in one object. */
  private async load(state: PartitionState, entries: CommitRecord[]): Promise<{ entry: CommitRecord; data: Uint8Array }[]> {
    const runs: { key: string; start: number; end: number; entries: CommitRecord[] }[] = [];
    for (const e of entries) {
      const run = runs.at(-1);
      if (run && run.key === e.objectKey && run.end === e.start) {
        run.end = e.end;
        run.entries.push(e);
      } else runs.push({ key: e.objectKey, start: e.start, end: e.end, entries: [e] });
    }
    const store = this.store(state.leader);
    const loaded = await Promise.all(runs.map((r) => store.get(r.key, { start: r.start, end: r.end })));
    return runs.flatMap((r, i) => r.entries.map((entry) => ({ entry, data: loaded[i]!.subarray(entry.start - r.start, entry.end - r.start) })));
  }

  private replicasOf(topic: TopicMeta, partition: number): number[] {
    const n = this.deps.stores.length;
    return Array.from({ length: topic.replicationFactor }, (_, j) => (partition + j) % n);
  }

  private store(id: number): ObjectStore {
    const s = this.deps.stores[id];
    if (!s) throw new KafkaError('KAFKA_STORAGE_ERROR', `Replica store ${id} is not configured`);
    return s;
  }

  private checkPartition(topic: TopicMeta, partition: number): void {
    if (!Number.isInteger(partition) || partition < 0 || partition >= topic.partitionCount) {
      throw new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `Partition ${partition} of topic ${topic.name} does not exist`);
    }
  }

  private readonly isIndexed = (pk: string, baseOffset: number) => this.indexed.get(pk) === baseOffset;

  private async serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.commitQueues.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => {});
    this.commitQueues.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.commitQueues.get(key) === tail) this.commitQueues.delete(key);
    }
  }
}

/** Object keys sort by creation time, which maintenance (orphan GC, merge) relies on. */
export function newObjectKey(topicId: string, now: number): string {
  return `data/${topicId}/${String(now).padStart(13, '0')}-${randomBytes(6).toString('hex')}`;
}

export function asKafkaError(e: unknown): KafkaError {
  if (e instanceof KafkaError) return e;
  return new KafkaError('KAFKA_STORAGE_ERROR', 'The storage layer failed; the request may be retried', { cause: e });
}
