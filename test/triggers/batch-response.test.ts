/** Reading a partial batch response (ReportBatchItemFailures) as Lambda reads one for Kafka. */
import { describe, expect, it } from 'vitest';
import { batchVerdict } from '../../src/triggers/batch-response.js';

const offsets = [10, 11, 12, 13];
const failing = (...ids: unknown[]) => ({ batchItemFailures: ids.map((itemIdentifier) => ({ itemIdentifier })) });

describe('partial batch responses', () => {
  it('reads no answer, null, an empty or absent list as success', () => {
    for (const r of [undefined, null, {}, { batchItemFailures: [] }, { batchItemFailures: null }])
      expect(batchVerdict(r, 'orders-0', offsets)).toEqual({ kind: 'success' });
  });

  it('retries from the lowest failed offset', () => {
    const r = failing({ partition: 'orders-0', offset: 13 }, { partition: 'orders-0', offset: 11 });
    expect(batchVerdict(r, 'orders-0', offsets)).toEqual({ kind: 'failed-from', offset: 11, failed: [13, 11] });
    expect(batchVerdict(failing({ partition: 'orders-0', offset: '12' }), 'orders-0', offsets)).toEqual({
      kind: 'failed-from',
      offset: 12,
      failed: [12],
    });
  });

  it('fails the whole batch on an answer that names no record of it', () => {
    for (const r of [
      'oops',
      [1],
      { batchItemFailures: {} },
      failing(null),
      { batchItemFailures: [{}] },
      failing({ partition: 'orders-1', offset: 11 }),
      failing({ partition: 'orders-0', offset: 14 }),
      failing({ partition: 'orders-0' }),
    ])
      expect(batchVerdict(r, 'orders-0', offsets).kind).toBe('failed');
  });
});
