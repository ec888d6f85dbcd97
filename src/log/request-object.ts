import { KafkaError } from '../wire/errors.js';
import { compressionTypeOf } from '../wire/compression/index.js';
import {
  encodeRecordBatch,
  LOG_OVERHEAD,
  COMPRESSION_CODEC_MASK,
  readBatchHeader,
  recompressBatches,
  setBaseOffset,
  setLogAppendTime,
  type CompressionType,
  type LogRecord,
} from '../wire/record-batch.js';
import type { ProducedBatches } from './produced-batches.js';
import { checkRecordSize, chunkRecords } from '../wire/record-size.js';
import { requirePartition, type Topic } from '../topics/topics.js';
import { newRequestObjectKey } from '../storage/key-layout.js';
import { objectFormatVersion, requireCodecAllowed, writeVersion } from '../storage/formats.js';

/** A partition's records to append: records to encode, or batches a producer sent already encoded (and validated). */
export type PartitionAppend =
  | { partition: number; records: LogRecord[] }
  | { partition: number; batches: ProducedBatches };

/**
 * The producer fields the server writes into batches it encodes from JSON records: a transactional
 * producer's batches must carry them, as read_committed readers tell aborted batches by producer id.
 */
export interface HeaderProducer {
  producerId: number;
  producerEpoch: number;
  baseSequences: Map<number, number>;
  transactional?: boolean;
}

/** One partition's run of batches inside a request object. */
export interface PartitionRun {
  partition: number;
  start: number;
  end: number;
  recordCount: number;
  maxTimestamp: number;
}

export interface RequestObject {
  key: string;
  body: Uint8Array;
  runs: PartitionRun[];
  /** Partitions rejected before anything was written (bad partition, record too large, ...). */
  rejected: Map<number, KafkaError>;
}

/**
 * Lays out one produce request as one object: each partition's records as v2 batches (split to
 * stay within max.message.bytes), partition runs end to end. Batches carry offsets relative to
 * their run (0, n1, n1+n2, ...): absolute offsets are only assigned by the commit. A partition
 * whose batches would be stored in a codec the cluster's `featureLevel` does not allow yet is
 * rejected with UNSUPPORTED_COMPRESSION_TYPE (src/storage/formats.ts). `spare`: memory the
 * caller no longer needs once the records are encoded (a JSON produce's request body, which the
 * records' bytes may view), where the object is laid out when it fits rather than in new memory.
 */
export function buildRequestObject(
  topic: Topic,
  appends: PartitionAppend[],
  now: number,
  featureLevel: number,
  producer?: HeaderProducer,
  spare?: Uint8Array,
): RequestObject {
  const rejected = new Map<number, KafkaError>();
  const encoded: { partition: number; batches: Uint8Array[]; recordCount: number; maxTimestamp: number }[] = [];
  // Batches encoded from records, uncompressed, go through the scratch when every append is records.
  const arena =
    spare !== undefined && storedCompression(topic) === 'none' && appends.every((a) => 'records' in a)
      ? new ScratchArena()
      : undefined;
  for (const append of appends) {
    const { partition } = append;
    const arenaStart = arena?.used ?? 0;
    try {
      requirePartition(topic, partition);
      if ('batches' in append) {
        const { recordCount, minTimestamp, maxTimestamp } = append.batches;
        checkTimestamps(topic, minTimestamp, maxTimestamp, now);
        if (topic.config.compressionType === 'producer') requireCodecsAllowed(append.batches.bytes, featureLevel);
        else requireCodecAllowed(storedCompression(topic), featureLevel);
        // compression.type other than 'producer': batches compressed otherwise are encoded again.
        const bytes =
          topic.config.compressionType === 'producer'
            ? append.batches.bytes
            : recompressBatches(append.batches.bytes, storedCompression(topic), topic.config.compressionLevel);
        if (bytes !== append.batches.bytes) checkBatchSizes(bytes, topic.config.maxMessageBytes);
        if (topic.config.logAppendTime) stampLogAppendTime(bytes, now);
        encoded.push({
          partition,
          batches: [bytes],
          recordCount,
          maxTimestamp: topic.config.logAppendTime ? now : maxTimestamp,
        });
        continue;
      }
      const { records } = append;
      if (records.length === 0)
        throw new KafkaError('INVALID_RECORD', 'A produce request for a partition must hold at least one record');
      let min = Number.MAX_SAFE_INTEGER;
      let max = Number.MIN_SAFE_INTEGER;
      // Indexed: a for-of makes an iterator result per record where the loop is not optimised.
      for (let i = 0; i < records.length; i++) {
        const r = records[i]!;
        checkRecordSize(r, topic.config.maxMessageBytes);
        if (r.timestamp < min) min = r.timestamp;
        if (r.timestamp > max) max = r.timestamp;
      }
      checkTimestamps(topic, min, max, now);
      requireCodecAllowed(storedCompression(topic), featureLevel);
      const { logAppendTime } = topic.config;
      const stamped = logAppendTime ? records.map((r) => ({ ...r, timestamp: now })) : records;
      let recordCount = 0;
      const batches: Uint8Array[] = [];
      const baseSequence = producer?.baseSequences.get(partition);
      for (const chunk of chunkRecords(stamped, topic.config.maxMessageBytes)) {
        const header =
          producer && baseSequence !== undefined
            ? {
                producerId: producer.producerId,
                producerEpoch: producer.producerEpoch,
                baseSequence: baseSequence + recordCount,
                transactional: producer.transactional === true,
              }
            : {};
        batches.push(
          encodeRecordBatch(chunk, {
            baseOffset: recordCount,
            logAppendTime,
            compression: storedCompression(topic),
            ...(topic.config.compressionLevel === undefined ? {} : { compressionLevel: topic.config.compressionLevel }),
            ...(arena ? { allocate: arena.allocate } : {}),
            ...header,
          }),
        );
        recordCount += chunk.length;
      }
      encoded.push({ partition, batches, recordCount, maxTimestamp: logAppendTime ? now : max });
    } catch (e) {
      if (!(e instanceof KafkaError)) throw e;
      rejected.set(partition, e);
      if (arena) arena.used = arenaStart; // a partition rejected midway leaves no bytes behind
    }
  }
  const key = newRequestObjectKey(topic.id, now, writeVersion('request-object', featureLevel));
  if (arena) return { key, ...arena.layOut(encoded, spare!), rejected };
  if (encoded.length === 1 && encoded[0]!.batches.length === 1) {
    // The common single-partition request: its one batch is the object, no copy.
    const [{ partition, batches, recordCount, maxTimestamp }] = encoded as [(typeof encoded)[0]];
    const body = batches[0]!;
    return { key, body, runs: [{ partition, start: 0, end: body.byteLength, recordCount, maxTimestamp }], rejected };
  }
  const inPlace = spanInPlace(encoded);
  if (inPlace) return { key, ...inPlace, rejected };
  const body = new Uint8Array(encoded.reduce((n, p) => n + p.batches.reduce((m, b) => m + b.byteLength, 0), 0));
  const runs: PartitionRun[] = [];
  let pos = 0;
  for (const p of encoded) {
    const start = pos;
    for (const b of p.batches) {
      body.set(b, pos);
      pos += b.byteLength;
    }
    runs.push({ partition: p.partition, start, end: pos, recordCount: p.recordCount, maxTimestamp: p.maxTimestamp });
  }
  return { key, body, runs, rejected };
}

/**
 * Lays single-partition request objects of one partition out as one object, for a group commit:
 * their runs back to back in one run, each batch's base offset moved from its own run's numbering
 * to the group run's (the base offset is outside the CRC). `firstOffsets[i]` is where part i's
 * records start in the group run. The parts' own bytes are not changed.
 */
export function joinRequestObjects(
  topicId: string,
  parts: RequestObject[],
  now: number,
): { object: RequestObject; firstOffsets: number[] } {
  const runs = parts.map((p) => p.runs[0]!);
  const body = new Uint8Array(runs.reduce((n, r) => n + r.end - r.start, 0));
  const firstOffsets: number[] = [];
  let pos = 0;
  let recordCount = 0;
  let maxTimestamp = Number.MIN_SAFE_INTEGER;
  for (const [i, run] of runs.entries()) {
    const start = pos;
    body.set(parts[i]!.body.subarray(run.start, run.end), pos);
    pos += run.end - run.start;
    for (let at = start; at < pos; ) {
      const header = readBatchHeader(body, at);
      setBaseOffset(body, at, header.baseOffset + recordCount);
      at += LOG_OVERHEAD + header.batchLength;
    }
    firstOffsets.push(recordCount);
    recordCount += run.recordCount;
    maxTimestamp = Math.max(maxTimestamp, run.maxTimestamp);
  }
  const partition = runs[0]!.partition;
  return {
    object: {
      // The parts were laid out at one feature level: the group's object keeps their format.
      key: newRequestObjectKey(topicId, now, objectFormatVersion(parts[0]!.key)),
      body,
      runs: [{ partition, start: 0, end: pos, recordCount, maxTimestamp }],
      rejected: new Map(),
    },
    firstOffsets,
  };
}

/**
 * Where a request's batches are encoded when the caller hands spare memory: one buffer of this
 * module, reused from request to request (a first touch of new memory costs more on a VM than the
 * encoding itself), holding the batches back to back in the order of the partitions. They are
 * copied into the spare memory only once all are encoded, since the records' bytes may lie in it.
 */
let scratch = new Uint8Array(0);
/** The scratch is not kept past this: a larger request's batches are encoded in new memory. */
const MAX_SCRATCH_BYTES = 16 * 1024 * 1024;

class ScratchArena {
  used = 0;
  /** Batches past the scratch's bound, each in memory of its own. */
  private readonly own = new Set<Uint8Array>();

  allocate = (bytes: number): Uint8Array => {
    const end = this.used + bytes;
    if (end > MAX_SCRATCH_BYTES) {
      const out = new Uint8Array(bytes);
      this.own.add(out);
      return out;
    }
    if (end > scratch.length) {
      const grown = new Uint8Array(Math.min(MAX_SCRATCH_BYTES, Math.max(end, 2 * scratch.length)));
      grown.set(scratch.subarray(0, this.used));
      scratch = grown;
    }
    this.used = end;
    return scratch.subarray(end - bytes, end);
  };

  /**
   * The object: the batches laid out in `spare` when they fit (else in new memory), partition
   * after partition. A batch past the scratch's bound is its own memory, not in the scratch.
   */
  layOut(
    encoded: { partition: number; batches: Uint8Array[]; recordCount: number; maxTimestamp: number }[],
    spare: Uint8Array,
  ): { body: Uint8Array; runs: PartitionRun[] } {
    const total = encoded.reduce((n, p) => n + p.batches.reduce((m, b) => m + b.byteLength, 0), 0);
    const body = total <= spare.byteLength ? spare.subarray(0, total) : new Uint8Array(total);
    const runs: PartitionRun[] = [];
    let pos = 0;
    let inScratch = 0; // where the next batch written in the scratch starts
    for (const p of encoded) {
      const start = pos;
      for (const b of p.batches) {
        if (this.own.has(b)) body.set(b, pos);
        else {
          // Views taken before the scratch grew point into its old buffer: read by offset.
          body.set(scratch.subarray(inScratch, inScratch + b.byteLength), pos);
          inScratch += b.byteLength;
        }
        pos += b.byteLength;
      }
      runs.push({ partition: p.partition, start, end: pos, recordCount: p.recordCount, maxTimestamp: p.maxTimestamp });
    }
    return { body, runs };
  }
}

/**
 * Kafka's topic_data framing between one partition's records and the next (INT32 index, INT32
 * length): what a multi-partition request body holds between the runs of one topic.
 */
const PARTITION_FRAMING_BYTES = 8;

/**
 * The object as a view of the request body, when the partitions' batches lie in it in order with
 * exactly their partition framing between them (a multi-partition produce whose batches are stored as sent):
 * the runs point into the view, and the few framing bytes between them are stored but never read.
 * Saves copying the whole request into a new object. Anything else (batches the server encoded,
 * recompressed ones, a rejected partition's bytes in between) is laid out afresh.
 */
function spanInPlace(
  encoded: { partition: number; batches: Uint8Array[]; recordCount: number; maxTimestamp: number }[],
): { body: Uint8Array; runs: PartitionRun[] } | undefined {
  const first = encoded[0]?.batches[0];
  if (!first || encoded.some((p) => p.batches.length !== 1)) return undefined;
  // The bytes between two runs must be that framing, naming the next run's partition and length:
  // small buffers share Node's pool, so two unrelated allocations can lie a few bytes apart.
  const view = new DataView(first.buffer, 0, first.buffer.byteLength);
  let end = first.byteOffset;
  for (const [i, p] of encoded.entries()) {
    const b = p.batches[0]!;
    if (b.buffer !== first.buffer) return undefined;
    const gap = b.byteOffset - end;
    const framed =
      gap === PARTITION_FRAMING_BYTES &&
      view.getInt32(b.byteOffset - 8) === p.partition &&
      view.getInt32(b.byteOffset - 4) === b.byteLength;
    if (i > 0 && !framed) return undefined;
    end = b.byteOffset + b.byteLength;
  }
  const body = new Uint8Array(first.buffer, first.byteOffset, end - first.byteOffset);
  const runs = encoded.map((p) => {
    const b = p.batches[0]!;
    const start = b.byteOffset - first.byteOffset;
    return {
      partition: p.partition,
      start,
      end: start + b.byteLength,
      recordCount: p.recordCount,
      maxTimestamp: p.maxTimestamp,
    };
  });
  return { body, runs };
}

/** How batches the server encodes itself are compressed: as the topic's compression.type says, none for 'producer'. */
export const storedCompression = (topic: Topic): CompressionType => {
  const type = topic.config.compressionType;
  return type === 'producer' || type === 'uncompressed' ? 'none' : type;
};

/** Each batch's codec (validated batches: the codec exists) must be one the feature level allows. */
function requireCodecsAllowed(bytes: Uint8Array, featureLevel: number): void {
  for (let at = 0; at < bytes.byteLength; ) {
    const header = readBatchHeader(bytes, at);
    requireCodecAllowed(compressionTypeOf(header.attributes & COMPRESSION_CODEC_MASK) ?? 'none', featureLevel);
    at += LOG_OVERHEAD + header.batchLength;
  }
}

/**
 * Kafka's message.timestamp.before.max.ms / after.max.ms: a CreateTime timestamp too far before or
 * after the broker's clock fails the partition's batch with INVALID_TIMESTAMP.
 */
function checkTimestamps(topic: Topic, min: number, max: number, now: number): void {
  const { logAppendTime, timestampBeforeMaxMs, timestampAfterMaxMs } = topic.config;
  if (logAppendTime) return; // the broker's time replaces them
  if (max > now + timestampAfterMaxMs) {
    throw new KafkaError(
      'INVALID_TIMESTAMP',
      `Timestamp ${max} of a record is more than message.timestamp.after.max.ms (${timestampAfterMaxMs}) after the broker's time ${now}`,
    );
  }
  if (min < now - timestampBeforeMaxMs) {
    throw new KafkaError(
      'INVALID_TIMESTAMP',
      `Timestamp ${min} of a record is more than message.timestamp.before.max.ms (${timestampBeforeMaxMs}) before the broker's time ${now}`,
    );
  }
}

/** A batch the server encoded again (inflated, say) must still fit max.message.bytes, as Kafka checks. */
function checkBatchSizes(bytes: Uint8Array, maxMessageBytes: number): void {
  for (let at = 0; at < bytes.byteLength; ) {
    const size = LOG_OVERHEAD + readBatchHeader(bytes, at).batchLength;
    if (size > maxMessageBytes) {
      throw new KafkaError(
        'MESSAGE_TOO_LARGE',
        `The record batch is ${size} bytes once stored as compression.type says, larger than max.message.bytes (${maxMessageBytes})`,
      );
    }
    at += size;
  }
}

/** Marks every batch LogAppendTime at `now` (message.timestamp.type=LogAppendTime), as Kafka's broker does. */
function stampLogAppendTime(bytes: Uint8Array, now: number): void {
  for (let at = 0; at < bytes.byteLength; at += LOG_OVERHEAD + readBatchHeader(bytes, at).batchLength)
    setLogAppendTime(bytes, at, now);
}
