/**
 * The scale simulation (issue 35): `npm run bench:scale -- [--quick] [--profile aws|slow|none]
 * [--scenario NAME ...] [--feature-level N] [--json FILE]`.
 *
 * Each scenario runs the product's own code over the memory stores behind a latency per call
 * (bench/scale/profiles.ts: the figures and their published sources), on simulated time
 * (bench/scale/virtual-time.ts), so minutes of maintenance or of heart-beating run in seconds. The
 * storage calls are counted per item, per partition key and per S3 prefix; the table prints each
 * scenario's one-second peaks against DynamoDB's and S3's limits, the largest item, and the
 * scenario's own figures (a maintenance round's wall time, a commit's write units...). --quick
 * simulates less time (never fewer partitions or members).
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SUPPORTED_FEATURE_LEVEL } from '../src/storage/formats.js';
import { LIMITS, PROFILES } from './scale/profiles.js';
import { runScenario, type ScenarioResult } from './scale/scenario.js';
import { SCENARIOS } from './scale/scenarios.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    profile: { type: 'string', default: 'aws' },
    scenario: { type: 'string', multiple: true },
    'feature-level': { type: 'string', default: String(SUPPORTED_FEATURE_LEVEL) },
    json: { type: 'string' },
    verbose: { type: 'boolean', default: false },
  },
});
const profile = PROFILES[values.profile];
if (!profile) throw new Error(`unknown profile ${values.profile}; one of ${Object.keys(PROFILES).join(', ')}`);
const chosen = values.scenario?.length ? SCENARIOS.filter((s) => values.scenario!.includes(s.name)) : SCENARIOS;
if (chosen.length === 0) throw new Error(`no such scenario; one of ${SCENARIOS.map((s) => s.name).join(', ')}`);

const pct = (value: number, limit: number) => `${Math.round((100 * value) / limit)}%`;

function render(r: ScenarioResult): string {
  const t = r.traffic;
  const lines = [
    `## ${r.scenario} (${r.profile}, feature level ${r.featureLevel}${r.quick ? ', quick' : ''}): ${r.description}`,
    `simulated ${r.simulatedSeconds.toFixed(1)} s in ${r.cpuSeconds.toFixed(1)} s of CPU; calls: ${Object.entries(
      t.calls,
    )
      .map(([op, n]) => `${op} ${n}`)
      .join(', ')}`,
    '',
    '| measure | value | of the limit | where |',
    '| --- | ---: | ---: | --- |',
    ...Object.entries(r.figures).map(([k, v]) => `| ${k} | ${v} | | |`),
    `| peak WCU/s on one item | ${t.peakItemWriteUnits.perSecond} | ${pct(t.peakItemWriteUnits.perSecond, LIMITS.writeUnitsPerSecond)} | ${t.peakItemWriteUnits.key} |`,
    `| peak RCU/s on one item | ${t.peakItemReadUnits.perSecond} | ${pct(t.peakItemReadUnits.perSecond, LIMITS.readUnitsPerSecond)} | ${t.peakItemReadUnits.key} |`,
    `| peak WCU/s on one partition key | ${t.peakKeyWriteUnits.perSecond} | ${pct(t.peakKeyWriteUnits.perSecond, LIMITS.writeUnitsPerSecond)} | ${t.peakKeyWriteUnits.key} |`,
    `| peak RCU/s on one partition key | ${t.peakKeyReadUnits.perSecond} | ${pct(t.peakKeyReadUnits.perSecond, LIMITS.readUnitsPerSecond)} | ${t.peakKeyReadUnits.key} |`,
    `| peak PUT/s on one S3 prefix | ${t.peakPrefixPuts.perSecond} | ${pct(t.peakPrefixPuts.perSecond, LIMITS.putsPerSecondPerPrefix)} | ${t.peakPrefixPuts.key} |`,
    `| peak GET/s on one S3 prefix | ${t.peakPrefixGets.perSecond} | ${pct(t.peakPrefixGets.perSecond, LIMITS.getsPerSecondPerPrefix)} | ${t.peakPrefixGets.key} |`,
    `| largest item (bytes) | ${t.largestItem.bytes} | ${pct(t.largestItem.bytes, LIMITS.itemBytes)} | ${t.largestItem.key} |`,
  ];
  return lines.join('\n');
}

const results: ScenarioResult[] = [];
for (const scenario of chosen) {
  const log = values.verbose ? (msg: string) => console.error(`[${scenario.name}] ${msg}`) : undefined;
  const featureLevel = Number(values['feature-level']);
  const result = await runScenario(scenario, { quick: values.quick, profile, featureLevel, ...(log ? { log } : {}) });
  results.push(result);
  console.log(`${render(result)}\n`);
}
if (values.json) writeFileSync(values.json, `${JSON.stringify(results, null, 2)}\n`);
