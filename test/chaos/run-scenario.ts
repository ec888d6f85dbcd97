/**
 * One fault scenario end to end: emulators, fault proxies, a fleet of servers, the workload, the
 * fault schedule, then heal, settle, read back and check.
 */
import { join } from 'node:path';
import type { PartitionState } from '../../src/partition/partition-state.js';
import { partitionPk, STATE_SK } from '../../src/storage/key-layout.js';
import { DynamoDbMetadataStore } from '../../src/storage/dynamodb-metadata-store.js';
import { awsServerEnv, startDynalite, startS3rver } from '../support/emulators.js';
import { NO_FAULTS as none, startFaultProxy, type FaultProxy, type FaultRates } from './fault-proxy.js';
import { checkGroup, startGroupMembers, type GroupFindings } from './group-members.js';
import { checkLog, readPartition, type LogFindings } from './log-checker.js';
import { Ledger, sleep, startProducers, type ProducerSpec } from './producers.js';
import { createRng, type Rng } from './rng.js';
import { startFleet, type Fleet } from './server-fleet.js';
import { startTransactions, type TransactionFindings } from './transactions-load.js';

export interface Scenario {
  name: string;
  description: string;
  dynamodb: FaultRates;
  s3: FaultRates;
  kills: boolean;
  pauses: boolean;
  /**
   * A rolling deploy: server 0 starts on the previous release's code (`ScenarioOptions.previousRelease`)
   * beside the current code, and halfway through is replaced by the current code, as Lambda does.
   */
  deploy?: boolean;
  /** A transactional producer in the workload too (committed and aborted transactions). */
  transactions?: boolean;
}

const ambiguous: FaultRates = { applyThenDrop: 0.04, error: 0.02, reset: 0.01, delay: 0.05, maxDelayMs: 400 };
const light: FaultRates = { applyThenDrop: 0.01, error: 0.01, reset: 0.005, delay: 0.05, maxDelayMs: 300 };

export const SCENARIOS: Scenario[] = [
  {
    name: 'ddb-ambiguous',
    description: 'DynamoDB answers lost after the write applied, 500/503, resets, delays',
    dynamodb: ambiguous,
    s3: none,
    kills: false,
    pauses: false,
  },
  {
    name: 's3-faults',
    description: 'S3 answers lost after the put, 500/503, resets, delays',
    dynamodb: none,
    s3: ambiguous,
    kills: false,
    pauses: false,
  },
  {
    name: 'kills',
    description: 'SIGKILL of a server every 1.5-4 s, restarted 0.5-2 s later',
    dynamodb: none,
    s3: none,
    kills: true,
    pauses: false,
  },
  {
    name: 'pauses',
    description: 'DynamoDB or S3 stops answering for 0.5-2.5 s every 3-8 s',
    dynamodb: none,
    s3: none,
    kills: false,
    pauses: true,
  },
  {
    name: 'slow-commits',
    description: 'half the offset-commit writes to DynamoDB held 1-3 s (validated, then written late)',
    dynamodb: { ...none, slow: { match: '"off#', rate: 0.5, minMs: 1000, maxMs: 3000 } },
    s3: none,
    kills: false,
    pauses: false,
  },
  {
    name: 'rolling-deploy',
    description: 'the previous release beside the current code, then replaced by it (SIGTERM, as a deploy)',
    dynamodb: none,
    s3: none,
    kills: false,
    pauses: false,
    deploy: true,
    transactions: true,
  },
  {
    name: 'mixed',
    description: 'all of the above at once, at lower rates',
    dynamodb: light,
    s3: light,
    kills: true,
    pauses: true,
  },
];

export interface ScenarioOptions {
  scenario: Scenario;
  seed: number;
  /** How long faults are injected. */
  durationMs: number;
  servers: number;
  groupMembers: number;
  /** How many times to wait (3 s) and read again while acked records are missing (default 4). */
  settleRounds?: number;
  /**
   * The least work the run must see done: once healed, the workload goes on (up to 90 s more) until
   * it has, so that a loaded machine makes the run longer instead of its counts short.
   */
  workload?: { acked?: number; groupCommits?: number };
  /** The previous release's checkout (test/upgrade/release-checkout.ts), for a scenario with `deploy`. */
  previousRelease?: string;
  log?: (line: string) => void;
}

export interface ScenarioResult {
  scenario: string;
  seed: number;
  log: LogFindings;
  group: GroupFindings;
  kills: number;
  pauses: number;
  /** Servers replaced by the current code (a scenario with `deploy`). */
  deploys: number;
  transactions?: TransactionFindings;
  faults: { dynamodb: FaultProxy['stats']; s3: FaultProxy['stats'] };
  groupActivity: { joins: number; leaves: number; stalls: number; commits: number };
  violations: string[];
  /** On a violation: each partition's state item as DynamoDB holds it, to start the diagnosis from. */
  partitionStates?: Record<string, unknown>;
}

const CLUSTER = 'local';
const TOPICS = [
  { name: 'rf1', partitions: 3, rf: 1 },
  { name: 'rf2', partitions: 2, rf: 2 },
];
const GROUP_TOPIC = { name: 'grp', partitions: 4, rf: 1 };
const TXN_TOPIC = { name: 'txn', partitions: 2, rf: 2 };
const CURRENT_CODE = join(import.meta.dirname, '../..');

const PRODUCERS: ProducerSpec[] = [
  { id: 'plain-rf1-acks1', kind: 'plain', topic: 'rf1', partitions: 3, acks: 1 },
  { id: 'plain-rf2-acks1', kind: 'plain', topic: 'rf2', partitions: 2, acks: 1 },
  { id: 'plain-rf2-all', kind: 'plain', topic: 'rf2', partitions: 2, acks: 'all' },
  { id: 'idem-rf1', kind: 'idempotent', topic: 'rf1', partitions: 3, acks: 'all' },
  { id: 'idem-rf2', kind: 'idempotent', topic: 'rf2', partitions: 2, acks: 'all' },
  { id: 'json-rf1-all', kind: 'json', topic: 'rf1', partitions: 3, acks: 'all' },
  { id: 'json-rf2-acks1', kind: 'json', topic: 'rf2', partitions: 2, acks: 1 },
];

export async function runScenario(o: ScenarioOptions): Promise<ScenarioResult> {
  const t0 = Date.now();
  const say = (line: string) => o.log?.(`${((Date.now() - t0) / 1000).toFixed(1)}s ${line}`);
  const rng = createRng(o.seed);
  const buckets = ['chaos-0', 'chaos-1'];
  const s3 = await startS3rver({ buckets });
  const ddb = await startDynalite();
  const ddbProxy = await startFaultProxy(ddb.endpoint, rng.fork('ddb'));
  const s3Proxy = await startFaultProxy(s3.endpoint, rng.fork('s3'));
  let fleet: Fleet | undefined;
  try {
    if (o.scenario.deploy && !o.previousRelease) throw new Error(`${o.scenario.name} needs previousRelease`);
    fleet = await startFleet({
      count: o.servers,
      checkouts: o.scenario.deploy ? [o.previousRelease] : undefined,
      env: {
        ...awsServerEnv({
          table: ddb.table,
          buckets,
          dynamoDbEndpoint: ddbProxy.endpoint,
          s3Endpoint: s3Proxy.endpoint,
        }),
        CLUSTER_ID: CLUSTER,
        SCHEDULER_INTERVAL_MS: '1000',
      },
    });
    const f = fleet;
    say(`[${o.scenario.name}] ${o.servers} servers up: ${f.origins().join(' ')}`);
    say(`[${o.scenario.name}] faults on for ${o.durationMs / 1000} s`);
    for (const t of [...TOPICS, GROUP_TOPIC, ...(o.scenario.transactions ? [TXN_TOPIC] : [])]) {
      const res = await fetch(`${f.origins()[0]}/v3/clusters/${CLUSTER}/topics`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ topic_name: t.name, partitions_count: t.partitions, replication_factor: t.rf }),
      });
      if (res.status !== 201) throw new Error(`create topic ${t.name}: ${res.status} ${await res.text()}`);
    }

    // Warm every server (module loading, first SDK connections) so a cold start is not the first fault.
    await Promise.all(
      f.origins().map(async (origin) => {
        for (const t of TOPICS)
          await fetch(`${origin}/v3/clusters/${CLUSTER}/topics/${t.name}/partitions/0/records?offset=0`);
      }),
    );

    const live = () => {
      const up = f.slots.filter((s) => s.up).map((s) => s.origin);
      return up.length > 0 ? up : f.origins();
    };
    const ledger = new Ledger();
    const producers = startProducers(PRODUCERS, f.origins, ledger, rng.fork('producers'), CLUSTER);
    const members = startGroupMembers({
      count: o.groupMembers,
      topic: GROUP_TOPIC.name,
      groupId: `chaos-${o.seed}`,
      servers: f.origins,
      clusterId: CLUSTER,
      rng: rng.fork('group'),
    });

    const transactions = o.scenario.transactions
      ? startTransactions({
          topic: TXN_TOPIC.name,
          partitions: TXN_TOPIC.partitions,
          transactionalId: `chaos-tx-${o.seed}`,
          servers: live,
          clusterId: CLUSTER,
          rng: rng.fork('transactions'),
        })
      : undefined;

    ddbProxy.rates = { ...o.scenario.dynamodb };
    s3Proxy.rates = { ...o.scenario.s3 };
    let kills = 0;
    let pauses = 0;
    const until = Date.now() + o.durationMs;
    const schedules: Promise<void>[] = [];
    if (o.scenario.kills) schedules.push(killLoop(f, rng.fork('kills'), until, () => kills++));
    if (o.scenario.pauses) schedules.push(pauseLoop([ddbProxy, s3Proxy], rng.fork('pauses'), until, () => pauses++));
    let deploys = 0;
    if (o.scenario.deploy)
      schedules.push(
        sleep(o.durationMs / 2).then(async () => {
          say(`[${o.scenario.name}] deploy: server 0 (${f.slots[0]!.checkout}) replaced by the current code`);
          await f.replace(0, CURRENT_CODE);
          deploys++;
        }),
      );
    await sleep(o.durationMs);
    // A loaded machine sends few requests in the run's time: the faults stay on until each proxy
    // given some has injected one (the bound only ends a run that would fail).
    const injects = (r: FaultRates) => r.applyThenDrop + r.error + r.reset > 0;
    const faulted = (p: FaultProxy, r: FaultRates) =>
      !injects(r) || p.stats.applyThenDrop + p.stats.error + p.stats.reset > 0;
    for (let bound = Date.now() + 30_000; Date.now() < bound; await sleep(100))
      if (faulted(ddbProxy, o.scenario.dynamodb) && faulted(s3Proxy, o.scenario.s3)) break;
    await Promise.all(schedules);

    // Heal: no more faults, every server back, then let the workload finish what is in flight.
    say(`[${o.scenario.name}] healing`);
    ddbProxy.heal();
    s3Proxy.heal();
    for (const s of f.slots) if (!s.up) await f.restart(s.index);
    const acked = () => [...ledger.records.values()].filter((r) => r.outcome === 'acked').length;
    const groupCommits = () => members.log.commits.filter((c) => c.result === '200').length;
    const enough = () => acked() >= (o.workload?.acked ?? 0) && groupCommits() >= (o.workload?.groupCommits ?? 0);
    for (let bound = Date.now() + 90_000; !enough() && Date.now() < bound; ) await sleep(100);
    if (!enough()) {
      // Why so little was acknowledged: the producers' most frequent errors.
      const errors = new Map<string, number>();
      for (const { error } of ledger.records.values()) if (error) errors.set(error, (errors.get(error) ?? 0) + 1);
      const top = [...errors].sort((a, b) => b[1] - a[1]).slice(0, 5);
      say(
        `[${o.scenario.name}] workload short after 90 s more: ${acked()} acked, ${groupCommits()} group commits; ` +
          `errors: ${top.map(([e, n]) => `${n}x ${e.slice(0, 200)}`).join(' | ') || 'none'}`,
      );
    }
    await Promise.all([producers.stop(), members.stop(), transactions?.stop()]);
    say(`[${o.scenario.name}] workload stopped; reading back`);

    // Settle: replica sync and HW advance run on the scheduler; read until two reads agree.
    let log: LogFindings | undefined;
    const rounds = o.settleRounds ?? 4;
    for (let round = 0; round < rounds; round++) {
      await sleep(round === 0 ? 2500 : 3000);
      const reads = [];
      for (const t of TOPICS)
        for (let p = 0; p < t.partitions; p++) reads.push(await readPartition(live()[0]!, CLUSTER, t.name, p));
      log = checkLog(ledger, reads);
      const open = log.lost.length + log.unreachableBelowHw.length + log.ackedAboveHwAll.length + log.ackedAboveHwOne;
      if (open === 0 || round === rounds - 1) break;
      say(
        `[${o.scenario.name}] after settle round ${round}: ${log.lost.length} lost, ${log.ackedAboveHwAll.length + log.ackedAboveHwOne} acked above the HW, ${log.unreachableBelowHw.length} unreachable; reading again`,
      );
    }
    const committed = await readCommitted(live()[0]!, `chaos-${o.seed}`);
    const group = checkGroup(members.log, committed);
    const txnFindings = await transactions?.check(live()[0]!);
    const result: ScenarioResult = {
      scenario: o.scenario.name,
      seed: o.seed,
      log: log!,
      group,
      kills,
      pauses,
      deploys,
      ...(txnFindings ? { transactions: txnFindings } : {}),
      faults: { dynamodb: { ...ddbProxy.stats }, s3: { ...s3Proxy.stats } },
      groupActivity: {
        joins: members.log.joins,
        leaves: members.log.leaves,
        stalls: members.log.stalls,
        commits: members.log.commits.length,
      },
      violations: [],
    };
    result.violations = violationsOf(result);
    if (result.violations.length > 0) {
      const metadata = new DynamoDbMetadataStore({ table: ddb.table, client: ddb.client });
      result.partitionStates = {};
      for (const t of TOPICS) {
        for (let p = 0; p < t.partitions; p++) {
          const item = await metadata.get<PartitionState>(partitionPk(t.name, p), STATE_SK);
          const st = item?.value;
          result.partitionStates[`${t.name}-${p}`] = st && {
            leader: st.leader,
            leaderEpoch: st.leaderEpoch,
            isr: st.isr,
            replicaLeo: st.replicaLeo,
            highWatermark: st.highWatermark,
            // On a topic with a commit log the item is as of its fold: entries past `clog` are not in it.
            ...(st.clog !== undefined && { clog: st.clog }),
            epochHistory: st.epochHistory,
            lastCommit: st.lastCommit && {
              baseOffset: st.lastCommit.baseOffset,
              lastOffset: st.lastCommit.lastOffset,
              leaderEpoch: st.lastCommit.leaderEpoch,
              stores: st.lastCommit.stores,
            },
            lastCaughtUpMs: st.lastCaughtUpMs,
          };
        }
      }
    }
    return result;
  } finally {
    await fleet?.stop();
    await Promise.all([ddbProxy.close(), s3Proxy.close()]);
    await Promise.all([s3.stop(), ddb.stop()]);
  }
}

/** The fields of findings that list counterexamples. */
type Lists<T> = { [K in keyof T]: T[K] extends string[] ? K : never }[keyof T];

/** The invariants, by the findings that hold each one's counterexamples; any of them fails the run. */
const LOG_INVARIANTS: [Lists<LogFindings>, string][] = [
  ['lost', 'lost'],
  ['ackedAboveHwAll', 'acks=all acked above HW'],
  ['serverDuplicates', 'server-side duplicates'],
  ['idempotentDuplicates', 'idempotent duplicates'],
  ['idempotentBumpDuplicates', 'idempotent duplicates across an epoch bump'],
  ['gaps', 'gaps'],
  ['unreachableBelowHw', 'unreachable below HW'],
  ['moved', 'moved'],
  ['reorderedIdempotent', 'reordered (idempotent)'],
];
const GROUP_INVARIANTS: [Lists<GroupFindings>, string][] = [
  ['twoOwners', 'two owners'],
  ['staleCommitsAccepted', 'stale commits accepted'],
  ['staleCommitsLanded', 'stale commits landed'],
  ['ghostMembers', 'ghost members'],
];

const TRANSACTION_INVARIANTS: [Lists<TransactionFindings>, string][] = [
  ['lostCommitted', 'committed transaction records lost'],
  ['duplicated', 'transactional records duplicated'],
  ['abortedVisible', 'aborted records visible to read_committed'],
];

/** One line per invariant with counterexamples: how many, and the first three. */
function violationsOf(r: Pick<ScenarioResult, 'log' | 'group' | 'transactions'>): string[] {
  const txn = r.transactions;
  const found = [
    ...LOG_INVARIANTS.map(([field, name]) => [name, r.log[field]] as const),
    ...GROUP_INVARIANTS.map(([field, name]) => [name, r.group[field]] as const),
    ...(txn ? TRANSACTION_INVARIANTS.map(([field, name]) => [name, txn[field]] as const) : []),
  ];
  return found.flatMap(([name, items]) =>
    items.length > 0
      ? [`${name}: ${items.length} (${items.slice(0, 3).join('; ')}${items.length > 3 ? '; ...' : ''})`]
      : [],
  );
}

async function killLoop(f: Fleet, rng: Rng, until: number, counted: () => void): Promise<void> {
  const restarts: Promise<void>[] = [];
  for (;;) {
    await sleep(rng.int(1500, 4000));
    if (Date.now() >= until) break;
    const up = f.slots.filter((s) => s.up);
    if (up.length < 2) continue; // keep one server answering
    const victim = rng.pick(up);
    await f.kill(victim.index);
    counted();
    const downFor = rng.int(500, 2000);
    restarts.push(sleep(downFor).then(() => f.restart(victim.index)));
  }
  await Promise.all(restarts);
}

async function pauseLoop(proxies: FaultProxy[], rng: Rng, until: number, counted: () => void): Promise<void> {
  for (;;) {
    await sleep(rng.int(3000, 8000));
    if (Date.now() >= until) return;
    rng.pick(proxies).pause(rng.int(500, 2500));
    counted();
  }
}

async function readCommitted(
  origin: string,
  groupId: string,
): Promise<Map<number, { offset: number; metadata: string }>> {
  const res = await fetch(
    `${origin}/v3/clusters/${CLUSTER}/consumer-groups/${groupId}/offsets?topic_name=${GROUP_TOPIC.name}`,
  );
  const out = new Map<number, { offset: number; metadata: string }>();
  if (res.status !== 200) return out;
  const body = (await res.json()) as {
    data: { partition_id: number; committed_offset: number | null; offset_metadata: string | null }[];
  };
  for (const d of body.data)
    if (d.committed_offset !== null)
      out.set(d.partition_id, { offset: d.committed_offset, metadata: d.offset_metadata ?? '' });
  return out;
}
