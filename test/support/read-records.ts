/** A partition's records from an offset, as the JSON fetch answers them: the batch read, decoded (log/fetched-records.ts). */
import { fetchedRecords, type FetchResult } from '../../src/log/fetched-records.js';
import type { IsolationLevel, PartitionLog } from '../../src/log/partition-log.js';
import type { TopicMeta } from '../../src/topics/topics.js';

export async function readRecords(
  log: PartitionLog,
  topic: TopicMeta,
  partition: number,
  offset: number,
  maxBytes: number,
  isolation: IsolationLevel = 'read_uncommitted',
): Promise<FetchResult> {
  const batches = await log.reader.readBatches(topic, partition, offset, maxBytes, { isolation });
  return fetchedRecords(batches, offset, isolation);
}
