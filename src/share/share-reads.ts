/**
 * A share-partition's reads of its log: the records after SPEO that an acquisition may take, and
 * the records of offsets delivered again. A receive takes at most its max records and at most the
 * room under the in-flight bound (200), so the read is sized to that and its batches are decoded
 * only until enough records are in hand: reading and decoding a whole megabyte of records to take
 * a hundred of them was most of a receive's work.
 */
import { onlyPartition, skipsBatch, type PartitionLog } from '../log/partition-log.js';
import type { TopicMeta } from '../topics/topics.js';
import { decodeRecordBatch, type DecodedRecord } from '../wire/record-batch.js';
import { KafkaError } from '../wire/errors.js';
import type { ShareIsolationLevel } from './share-config.js';

/** The most bytes one read asks for (the log answers at least one whole batch, whatever its size). */
export const MAX_READ_BYTES = 1024 * 1024;
/**
 * Bytes asked for per record wanted before any is seen: a little more than a small record takes
 * stored. A read of bigger records, short of what is wanted, reads on from where it ended, sized by
 * the bytes per record it saw. Each batch of the answer may be another object (one per produce
 * request): reading a megabyte to take a hundred small records was ten object reads for two.
 */
const FIRST_BYTES_PER_RECORD = 256;
const MIN_READ_BYTES = 16 * 1024;

export interface ShareRead {
  /**
   * Records at or after the offset asked for, below the high watermark (read_committed: the last
   * stable offset, and none of an aborted transaction), in offset order (never control records).
   */
  records: DecodedRecord[];
  /** Where the records examined end: one past the last batch decoded, or where the log's answer ended. */
  nextOffset: number;
}

/**
 * Records of the log from `offset`, decoding batch by batch until `enough` holds of what is in hand
 * (then `nextOffset` is the end of the last batch decoded, so the caller knows nothing was skipped
 * before it). `want` sizes the reads. Undefined when retention moved the log's start past `offset`
 * meanwhile. `isolation` is the group's `share.isolation.level`: read_uncommitted (KIP-932's
 * default) takes records of open and aborted transactions too; read_committed reads up to the last
 * stable offset and leaves out the batches of the aborted transactions the log lists with its
 * answer, as a read_committed consumer does, so `nextOffset` moves past them.
 */
export async function readShareRecords(
  log: PartitionLog,
  topic: TopicMeta,
  partition: number,
  offset: number,
  options: {
    want: number;
    enough: (records: readonly DecodedRecord[]) => boolean;
    state?: Awaited<ReturnType<PartitionLog['state']>>;
    isolation?: ShareIsolationLevel;
  },
): Promise<ShareRead | undefined> {
  const isolation = options.isolation ?? 'read_uncommitted';
  const records: DecodedRecord[] = [];
  let from = offset;
  let bytesPerRecord = FIRST_BYTES_PER_RECORD;
  // What the reads of one call may ask for in all: a log of few records in many bytes (markers,
  // aborted transactions' leftovers) is read on by the next call, not to its end by this one.
  let budget = MAX_READ_BYTES;
  for (;;) {
    const wanted = Math.max(1, options.want - records.length);
    const maxBytes = Math.min(budget, Math.max(MIN_READ_BYTES, Math.ceil(wanted * bytesPerRecord * 1.25)));
    let result;
    try {
      result = onlyPartition(
        await log.reader.readBatchesMany(
          [{ topic, partition, offset: from, maxBytes, ...(options.state ? { state: options.state } : {}) }],
          maxBytes,
          Infinity,
          isolation,
        ),
      );
    } catch (e) {
      if (e instanceof KafkaError && e.errorName === 'OFFSET_OUT_OF_RANGE')
        return from === offset ? undefined : { records, nextOffset: from };
      throw e;
    }
    const bytes = result.batches;
    const upper = isolation === 'read_committed' ? result.lastStableOffset : result.highWatermark;
    const before = records.length;
    let position = 0;
    while (position < bytes.length) {
      const batch = decodeRecordBatch(bytes, position);
      position += batch.sizeInBytes;
      const { baseOffset, lastOffsetDelta } = batch.header;
      if (!skipsBatch(batch.header, result))
        for (const r of batch.records) if (r.offset >= from && r.offset < upper) records.push(r);
      if (options.enough(records))
        return { records, nextOffset: Math.min(baseOffset + lastOffsetDelta + 1, result.nextOffset) };
    }
    // The answer ended at the high watermark (read_committed: the last stable offset) or held
    // nothing: nothing more to read.
    if (result.nextOffset <= from || result.nextOffset >= upper) return { records, nextOffset: result.nextOffset };
    budget -= bytes.length;
    if (budget < MIN_READ_BYTES) return { records, nextOffset: result.nextOffset };
    bytesPerRecord = Math.max(bytesPerRecord, bytes.length / Math.max(1, records.length - before));
    from = result.nextOffset;
  }
}
