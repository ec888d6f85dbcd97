import type { ScenarioResult } from './run-scenario.js';

const COLUMNS: [string, (r: ScenarioResult) => string | number][] = [
  ['scenario', (r) => r.scenario],
  ['seed', (r) => r.seed],
  ['sent', (r) => r.log.sent],
  ['acked', (r) => r.log.acked],
  ['lost', (r) => r.log.lost.length],
  ['>HW all', (r) => r.log.ackedAboveHwAll.length],
  ['>HW acks1', (r) => r.log.ackedAboveHwOne],
  ['dup srv', (r) => r.log.serverDuplicates.length],
  ['dup retry', (r) => r.log.clientRetryDuplicates],
  ['dup idem', (r) => r.log.idempotentDuplicates.length],
  ['dup bump', (r) => r.log.idempotentBumpDuplicates.length],
  ['gaps', (r) => r.log.gaps.length],
  ['unreach', (r) => r.log.unreachableBelowHw.length],
  ['moved', (r) => r.log.moved.length],
  ['reord idem', (r) => r.log.reorderedIdempotent.length],
  ['reord plain', (r) => r.log.reorderedPlain],
  ['fail+present', (r) => r.log.failedButPresent],
  ['2 owners', (r) => r.group.twoOwners.length],
  ['stale acc', (r) => r.group.staleCommitsAccepted.length],
  ['stale land', (r) => r.group.staleCommitsLanded.length],
  ['ghosts', (r) => r.group.ghostMembers.length],
  ['commits', (r) => `${r.group.commitsAccepted}/${r.groupActivity.commits}`],
  [
    'txn c/a/?',
    (r) => (r.transactions ? `${r.transactions.committed}/${r.transactions.aborted}/${r.transactions.unknown}` : '-'),
  ],
  ['deploys', (r) => r.deploys],
  ['kills', (r) => r.kills],
  ['pauses', (r) => r.pauses],
  ['ddb faults', (r) => faultCount(r.faults.dynamodb)],
  ['s3 faults', (r) => faultCount(r.faults.s3)],
];

const faultCount = (s: ScenarioResult['faults']['s3']) =>
  `${s.applyThenDrop}/${s.error}/${s.reset}/${s.delay + s.slow}`;

/** A fixed-width table, one row per scenario. Fault columns: apply-then-drop/error/reset/delay (slow writes included). */
export function formatSummary(results: ScenarioResult[]): string {
  const rows = [COLUMNS.map(([h]) => h), ...results.map((r) => COLUMNS.map(([, f]) => String(f(r))))];
  const widths = COLUMNS.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  '))
    .join('\n');
}
