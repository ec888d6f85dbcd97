/**
 * The short fault run (`npm run chaos` is the long one; docs/faults.md): two `--backend aws`
 * servers over dynalite and s3rver behind fault proxies, for ~8 s of every fault at once (lost
 * answers of applied writes, 500/503, resets, delays, emulator pauses, SIGKILL and restart), then a
 * read-back of every partition and the group's commits.
 */
import { describe, expect, it } from 'vitest';
import { runScenario, SCENARIOS } from './run-scenario.js';

/**
 * Switch to true once the fixes of issue 12 (branch `faults`) are merged: the invariants issue 12
 * lists as broken are then asserted (server-side duplicates, an offset below the HW no fetch
 * returns, two owners of a partition, stale offset commits, ghost members). Until then the run
 * prints them (the violations line) without failing on them.
 */
const ISSUE_12_FIXED = true;

/**
 * True since this, found by this suite and not in issue 12's list, was fixed: an idempotent
 * producer's record appended twice, once under each of two producer epochs (the client resent it
 * after a KIP-360 epoch bump). The other finding of the suite, acks=all answered while a
 * follower in the ISR lacked the batch, is fixed and always asserted.
 */
const FOUND_BY_SUITE_FIXED = true;

describe('fault suite (short run)', () => {
  it('loses no acknowledged record and leaves no gap, moved or reordered record under faults', async () => {
    const seed = Number(process.env.CHAOS_SEED ?? 1);
    const r = await runScenario({
      scenario: SCENARIOS.find((s) => s.name === 'mixed')!,
      seed,
      durationMs: 8000,
      servers: 2,
      groupMembers: 3,
      settleRounds: 1,
      // Counts, not a rate: the run goes on until they are reached, however loaded the machine.
      workload: { acked: 51, groupCommits: 1 },
      log: (l) => console.log(l),
    });
    console.log(
      `chaos seed ${seed}: ${r.log.acked}/${r.log.sent} acked, kills ${r.kills}, pauses ${r.pauses}, violations: ${r.violations.join(' | ') || 'none'}`,
    );

    // The run did what it says: traffic flowed and faults were injected.
    expect(r.log.acked).toBeGreaterThan(50);
    expect(r.kills).toBeGreaterThan(0);
    expect(r.faults.dynamodb.applyThenDrop + r.faults.dynamodb.error + r.faults.dynamodb.reset).toBeGreaterThan(0);
    expect(r.groupActivity.commits).toBeGreaterThan(0);

    // Invariants that hold on the code as it is.
    expect(r.log.lost).toEqual([]);
    expect(r.log.gaps).toEqual([]);
    expect(r.log.moved).toEqual([]);
    expect(r.log.reorderedIdempotent).toEqual([]);

    // Invariants issue 12's fixes restore (see ISSUE_12_FIXED).
    const issue12 = {
      serverDuplicates: r.log.serverDuplicates,
      unreachableBelowHw: r.log.unreachableBelowHw,
      twoOwners: r.group.twoOwners,
      staleCommitsAccepted: r.group.staleCommitsAccepted,
      staleCommitsLanded: r.group.staleCommitsLanded,
      ghostMembers: r.group.ghostMembers,
    };
    if (ISSUE_12_FIXED)
      expect(issue12).toEqual({
        serverDuplicates: [],
        unreachableBelowHw: [],
        twoOwners: [],
        staleCommitsAccepted: [],
        staleCommitsLanded: [],
        ghostMembers: [],
      });
    // Invariants broken in ways issue 12 does not list (see FOUND_BY_SUITE_FIXED).
    expect(r.log.ackedAboveHwAll).toEqual([]);
    const found = {
      idempotentDuplicates: r.log.idempotentDuplicates,
      idempotentBumpDuplicates: r.log.idempotentBumpDuplicates,
    };
    if (FOUND_BY_SUITE_FIXED) expect(found).toEqual({ idempotentDuplicates: [], idempotentBumpDuplicates: [] });
    // A bound only: server starts and restarts take many times longer on a loaded machine (measured:
    // the workload ended at 77 s, reading back went past 90 s, at a load of 19 on two cores).
  }, 360_000);
});
