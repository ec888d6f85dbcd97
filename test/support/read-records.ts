/** A partition's records from an offset, as the JSON fetch answers them: the batch read, decoded (log/fetched-records.ts). */
import { fetchedRecords, type FetchResult } from '../../src/log/fetched-records.js';
import { onlyPartition, type IsolationLevel, type PartitionLog } from '../../src/log/partition-log.js';
import type { TopicMeta } from '../../src/topics/topics.js';

/** One partition's stored batches through the one read path (`readBatchesMany`), its error thrown. */
export async function readBatches(
  log: PartitionLog,
  topic: TopicMeta,
  partition: number,
  offset: number,
  maxBytes: number,
  options: { isolation?: IsolationLevel; currentLeaderEpoch?: number } = {},
) {
  return onlyPartition(
    await log.reader.readBatchesMany(
      [{ topic, partition, offset, maxBytes, currentLeaderEpoch: options.currentLeaderEpoch }],
      maxBytes,
      Infinity,
      options.isolation,
    ),
  );
}

export async function readRecords(
  log: PartitionLog,
  topic: TopicMeta,
  partition: number,
  offset: number,
  maxBytes: number,
  isolation: IsolationLevel = 'read_uncommitted',
): Promise<FetchResult> {
  return fetchedRecords(await readBatches(log, topic, partition, offset, maxBytes, { isolation }), offset, isolation);
}
