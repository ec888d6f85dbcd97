/**
 * bench:scale's counts of DynamoDB capacity (bench/scale/simulated-storage.ts): a delete is billed
 * by the size of the item it deletes, as DynamoDB bills it (a write unit a KB, rounded up), also
 * for an item written before the counts began.
 */
import { describe, expect, it } from 'vitest';
import { Traffic } from '../../bench/scale/simulated-storage.js';

const put = (sk: string, itemBytes: number) =>
  ({
    port: 'metadata',
    op: 'UpdateItem',
    pk: 'txn#x',
    sk,
    itemBytes,
    conditional: false,
    conditionFailed: false,
    failed: false,
  }) as const;
const del = (sk: string) =>
  ({ port: 'metadata', op: 'DeleteItem', pk: 'txn#x', sk, conditionFailed: false, failed: false }) as const;

describe('bench:scale write units of a delete', () => {
  it('bills a delete by the deleted item, 1 unit a KB, and 1 unit where the item is unknown', () => {
    const traffic = new Traffic({ now: () => 0 });
    traffic.record(put('before', 4_300)); // before the counts began: not counted, its size known
    traffic.start();
    traffic.record(put('o#1', 4_300));
    traffic.record(put('p#1', 60));
    expect(traffic.summary().writeUnits).toBe(5 + 1);
    traffic.record(del('o#1'));
    traffic.record(del('p#1'));
    traffic.record(del('before'));
    traffic.record(del('never-seen'));
    expect(traffic.summary().writeUnits).toBe(6 + 5 + 1 + 5 + 1);
    // Gone: a second delete of it finds nothing of known size.
    traffic.record(del('o#1'));
    expect(traffic.summary().writeUnits).toBe(18 + 1);
    expect(traffic.summary().peakKeyWriteUnits).toEqual({ key: 'txn#x', perSecond: 19 });
  });
});
