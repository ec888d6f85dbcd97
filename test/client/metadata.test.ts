/**
 * The producer's placements (src/client/metadata.ts) as produce answers update them: a newer
 * leader epoch replaces the partition's place, the same epoch with another ISR too (acks=all
 * requests are grouped by it), and an older epoch is a stale answer that changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { Metadata } from '../../src/client/metadata.js';
import type { Transport } from '../../src/client/transport.js';
import { until } from '../support/until.js';

/** A transport that answers the partitions list only: partition 0 led by 0 at epoch 3, ISR [0, 1]. */
function listing(): { transport: Transport; reads: () => number } {
  let reads = 0;
  const transport = {
    request: async () => {
      reads++;
      return { status: 200, body: { data: [{ partition_id: 0, leader_id: 0, leader_epoch: 3, isr: [0, 1] }] } };
    },
  } as unknown as Transport;
  return { transport, reads: () => reads };
}

describe('placements from produce answers', () => {
  it('takes a newer epoch or another ISR at the same epoch, and ignores an older epoch', async () => {
    const { transport, reads } = listing();
    const metadata = new Metadata(transport);
    // Not read yet: an answer changes nothing (the read decides), and the read starts.
    metadata.placementSeen('t', 0, { leader: 5, leaderEpoch: 9, isr: [5] });
    expect(metadata.placement('t', 0)).toBeUndefined();
    await until('the partitions read', () => metadata.placement('t', 0) !== undefined);
    expect(metadata.placement('t', 0)).toEqual({ leader: 0, leaderEpoch: 3, isr: [0, 1] });

    metadata.placementSeen('t', 0, { leader: 1, leaderEpoch: 2, isr: [1] });
    expect(metadata.placement('t', 0)).toEqual({ leader: 0, leaderEpoch: 3, isr: [0, 1] });

    metadata.placementSeen('t', 0, { leader: 0, leaderEpoch: 3, isr: [0] });
    expect(metadata.placement('t', 0)).toEqual({ leader: 0, leaderEpoch: 3, isr: [0] });

    metadata.placementSeen('t', 0, { leader: 1, leaderEpoch: 4, isr: [1, 2] });
    expect(metadata.placement('t', 0)).toEqual({ leader: 1, leaderEpoch: 4, isr: [1, 2] });
    // An answer without an epoch (an older server) changes nothing; none of this read the list again.
    metadata.placementSeen('t', 0, { leader: 2, isr: [2] });
    expect(metadata.placement('t', 0)).toEqual({ leader: 1, leaderEpoch: 4, isr: [1, 2] });
    expect(reads()).toBe(1);
  });
});
