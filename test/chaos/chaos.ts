/**
 * `npm run chaos`: runs the fault scenarios (docs/faults.md) and prints a summary table; exits 1 on
 * any violated invariant.
 *
 *   npm run chaos -- --duration 20 --seed 7 --scenario ddb-ambiguous,kills --servers 3 --members 4
 *
 * --duration: seconds of faults per scenario (default 15; each scenario adds ~15-20 s to start,
 * heal and read back). --seed: the first scenario's seed (the next ones add 1). --scenario: names,
 * comma-separated, or `all` (default). --json: print the full results as JSON too.
 */
import { parseArgs } from 'node:util';
import { formatSummary } from './summary.js';
import { releaseCheckout } from '../upgrade/release-checkout.js';
import { runScenario, SCENARIOS, type ScenarioResult } from './run-scenario.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '15' },
    seed: { type: 'string', default: String(Date.now() % 100_000) },
    scenario: { type: 'string', default: 'all' },
    servers: { type: 'string', default: '3' },
    members: { type: 'string', default: '4' },
    json: { type: 'boolean', default: false },
  },
});

const names =
  values.scenario === 'all' ? SCENARIOS.map((s) => s.name) : values.scenario.split(',').map((s) => s.trim());
const unknown = names.filter((n) => !SCENARIOS.some((s) => s.name === n));
if (unknown.length > 0) {
  console.error(`unknown scenario(s) ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`);
  process.exit(2);
}

const results: ScenarioResult[] = [];
const seed = Number(values.seed);
for (const [i, name] of names.entries()) {
  const scenario = SCENARIOS.find((s) => s.name === name)!;
  console.log(`== ${name} (seed ${seed + i}): ${scenario.description}`);
  // A rolling deploy runs the previous release (its commit is in the history; see release-checkout.ts).
  const previous = scenario.deploy ? releaseCheckout() : undefined;
  if (previous && 'skip' in previous) {
    console.log(`  SKIPPED: ${previous.skip}`);
    continue;
  }
  const r = await runScenario({
    ...(previous ? { previousRelease: previous.dir } : {}),
    scenario,
    seed: seed + i,
    durationMs: Number(values.duration) * 1000,
    servers: Number(values.servers),
    groupMembers: Number(values.members),
    log: (l) => console.log(l),
  });
  results.push(r);
  for (const v of r.violations) console.log(`  VIOLATION ${v}`);
}
console.log('');
console.log(formatSummary(results));
if (values.json) console.log(JSON.stringify(results, null, 2));
const failed = results.filter((r) => r.violations.length > 0);
console.log(
  failed.length === 0 ? '\nno violations' : `\n${failed.length} of ${results.length} scenario(s) violated an invariant`,
);
process.exit(failed.length === 0 ? 0 : 1);
