/**
 * A function's answer to a batch under ReportBatchItemFailures (Lambda's partial batch response):
 * `{"batchItemFailures":[{"itemIdentifier":{"partition":"topic-N","offset":n}}]}`. An absent, null
 * or empty list is a success. As Lambda does, an answer it cannot read as failures of this batch
 * (not an object, an identifier missing, of another partition or of an offset not in the batch)
 * counts as the whole batch failing, so a bug in the function never skips records.
 */
export type BatchVerdict =
  | { kind: 'success' }
  /** Records from `offset` on are retried; the ones before it succeeded. `failed`: the offsets named. */
  | { kind: 'failed-from'; offset: number; failed: number[] }
  | { kind: 'failed'; why: string };

export function batchVerdict(response: unknown, partitionKey: string, offsets: readonly number[]): BatchVerdict {
  if (response === undefined || response === null) return { kind: 'success' };
  if (typeof response !== 'object' || Array.isArray(response))
    return { kind: 'failed', why: 'the response is not a batchItemFailures object' };
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return { kind: 'success' };
  if (!Array.isArray(failures)) return { kind: 'failed', why: 'batchItemFailures is not an array' };
  if (failures.length === 0) return { kind: 'success' };
  const inBatch = new Set(offsets);
  let lowest = Number.POSITIVE_INFINITY;
  const failed: number[] = [];
  for (const f of failures) {
    const id = (f as { itemIdentifier?: unknown } | null)?.itemIdentifier as
      | { partition?: unknown; offset?: unknown }
      | undefined;
    if (typeof id !== 'object' || id === null) return { kind: 'failed', why: 'an itemIdentifier is missing' };
    const offset = typeof id.offset === 'string' && /^\d+$/.test(id.offset) ? Number(id.offset) : id.offset;
    if (id.partition !== partitionKey || typeof offset !== 'number' || !inBatch.has(offset))
      return { kind: 'failed', why: `itemIdentifier ${JSON.stringify(id)} is not a record of this batch` };
    lowest = Math.min(lowest, offset);
    failed.push(offset);
  }
  return { kind: 'failed-from', offset: lowest, failed };
}
