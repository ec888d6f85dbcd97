/**
 * A trigger's delivery under ambiguous writes: lease claims, renewals, releases and offset commits
 * that fail before they apply, apply and then fail, or apply and are sent again (what the AWS SDK
 * does when an answer is lost). Every record still arrives at least once, in order per partition
 * (per key with ordering KEY), and the committed offsets are never ahead of what the target
 * acknowledged.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { memoryBackend, awsBackend } from '../support/backends.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { ackedUpTo, eventually, orderProblems, startSink, type Sink } from './webhook-sink.js';

describe.each([memoryBackend, awsBackend])('trigger delivery under ambiguous writes on $name', (backend) => {
  let sink: Sink;
  let t: ReturnType<typeof testApp>;
  let stop: () => Promise<void>;
  afterEach(async () => {
    await t.services.triggers.runner.close();
    await sink.close();
    await stop();
  });

  it('delivers every record at least once, in order, offsets never ahead of success', async () => {
    const started = await backend.start();
    stop = started.stop;
    const metadata = new FaultyMetadataStore(started.storage.metadata);
    sink = await startSink();
    t = testApp({ storage: { ...started.storage, metadata }, runTriggers: true });
    expect((await t.call('POST', 'topics', { topic_name: 'amb', partitions_count: 3 })).status).toBe(201);
    expect(
      (
        await t.call('POST', 'triggers', {
          trigger_name: 'amb-hook',
          topic_name: 'amb',
          batch_size: 3,
          target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 1000 },
        })
      ).status,
    ).toBe(201);
    const lease = (k: string) => k.startsWith('trigger#amb-hook|');
    const offsets = (k: string) => k.startsWith('group#trigger.amb-hook|off#');
    for (const when of ['retried', 'after', 'before', 'retried'] as const) {
      metadata.faults.fail('put', { when, times: 2, match: lease });
      metadata.faults.fail('put', { when, times: 1, match: offsets });
    }
    // The invariant, checked while it runs: committed offsets (read first) never past the acknowledged ones.
    const violations: string[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const described = await t.call('GET', 'triggers/amb-hook');
        const acked = ackedUpTo(sink, 3);
        for (const p of described.body?.partitions ?? [])
          if (p.committed_offset > acked[p.partition_id]!)
            violations.push(
              `partition ${p.partition_id}: committed ${p.committed_offset}, acked ${acked[p.partition_id]}`,
            );
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    for (let i = 0; i < 30; i++)
      expect((await t.call('POST', 'topics/amb/records', { partition_id: i % 3, value: { data: i } })).status).toBe(
        200,
      );
    await eventually(() => ackedUpTo(sink, 3).every((n) => n === 10), 30_000);
    await eventually(async () => (await t.call('GET', 'triggers/amb-hook')).body.lag === 0, 30_000);
    watching = false;
    await watch;
    expect(metadata.faults.injected).toBeGreaterThanOrEqual(8);
    expect(violations).toEqual([]);
    expect(orderProblems(sink.events)).toEqual([]);
    for (let p = 0; p < 3; p++) {
      const got = new Set(sink.delivered.filter((r) => r.partition === p).map((r) => r.offset));
      expect([...got].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
  }, 60_000);

  it('ordering KEY: every record at least once, each key in order, offsets never past an unacknowledged record', async () => {
    const started = await backend.start();
    stop = started.stop;
    const metadata = new FaultyMetadataStore(started.storage.metadata);
    sink = await startSink();
    t = testApp({ storage: { ...started.storage, metadata }, runTriggers: true });
    expect((await t.call('POST', 'topics', { topic_name: 'kamb', partitions_count: 2 })).status).toBe(201);
    expect(
      (
        await t.call('POST', 'triggers', {
          trigger_name: 'kamb-hook',
          topic_name: 'kamb',
          batch_size: 2,
          ordering: 'KEY',
          key_lanes: 3,
          maximum_batching_window_ms: 0,
          target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 1000 },
        })
      ).status,
    ).toBe(201);
    const lease = (k: string) => k.startsWith('trigger#kamb-hook|');
    const offsets = (k: string) => k.startsWith('group#trigger.kamb-hook|off#');
    for (const when of ['retried', 'after', 'before', 'retried'] as const) {
      metadata.faults.fail('put', { when, times: 2, match: lease });
      metadata.faults.fail('put', { when, times: 1, match: offsets });
    }
    // Slow enough that lanes overlap; one call in five fails.
    sink.answer = (_e, call) => ({ delayMs: 10, status: call % 5 === 3 ? 500 : 200 });
    // Committed (read first) never past an offset the webhook has not acknowledged.
    const violations: string[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const described = await t.call('GET', 'triggers/kamb-hook');
        for (const p of described.body?.partitions ?? []) {
          const acked = new Set(sink.delivered.filter((r) => r.partition === p.partition_id).map((r) => r.offset));
          for (let o = 0; o < p.committed_offset; o++)
            if (!acked.has(o)) {
              violations.push(`partition ${p.partition_id}: committed ${p.committed_offset}, ${o} not acknowledged`);
              break;
            }
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    const N = 40;
    for (let i = 0; i < N; i++)
      expect(
        (
          await t.call('POST', 'topics/kamb/records', {
            partition_id: i % 2,
            key: { type: 'STRING', data: `k${i % 6}` },
            value: { type: 'STRING', data: String(i) },
          })
        ).status,
      ).toBe(200);
    // A lease write that failed is taken over by the process's next run (below), not waited out.
    await eventually(async () => (await t.call('GET', 'triggers/kamb-hook')).body.lag === 0, 75_000);
    watching = false;
    await watch;
    expect(metadata.faults.injected).toBeGreaterThanOrEqual(8);
    expect(violations).toEqual([]);
    // Every record acknowledged; per key, first deliveries in offset order.
    const firsts = new Map<string, number[]>();
    const seen = new Set<string>();
    for (const r of sink.delivered) {
      const id = `${r.partition}/${r.offset}`;
      if (seen.has(id)) continue;
      seen.add(id);
      const k = `${r.partition}/${Buffer.from(r.key!, 'base64').toString()}`;
      firsts.set(k, [...(firsts.get(k) ?? []), r.offset]);
    }
    expect(seen.size).toBe(N);
    for (const [k, o] of firsts) expect(o, k).toEqual([...o].sort((a, b) => a - b));
  }, 100_000);

  /**
   * A run whose lease write failed without the process dying leaves the lease to its holder id;
   * the process's next run takes it over instead of waiting it out (50 s here: 2 x (20 s + 5 s)).
   */
  const leftLease = async (
    name: string,
    fault: (metadata: FaultyMetadataStore, lease: (k: string) => boolean) => void,
  ) => {
    const started = await backend.start();
    stop = started.stop;
    const metadata = new FaultyMetadataStore(started.storage.metadata);
    sink = await startSink();
    t = testApp({ storage: { ...started.storage, metadata }, runTriggers: true });
    expect((await t.call('POST', 'topics', { topic_name: name, partitions_count: 1 })).status).toBe(201);
    expect(
      (
        await t.call('POST', 'triggers', {
          trigger_name: `${name}-hook`,
          topic_name: name,
          target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 20_000 },
        })
      ).status,
    ).toBe(201);
    fault(metadata, (k) => k === `trigger#${name}-hook|lease#${name}#0`);
    const produce = async (data: number) =>
      expect((await t.call('POST', `topics/${name}/records`, { partition_id: 0, value: { data } })).status).toBe(200);
    return { metadata, started, produce };
  };
  const leaseUntil = async (metadata: FaultyMetadataStore, name: string) =>
    (await metadata.get<{ holder?: string; until: number }>(`trigger#${name}-hook`, `lease#${name}#0`))?.value;

  it('a claim that applied but whose answer was lost: the next run of the process takes the lease over', async () => {
    const { metadata, produce } = await leftLease('lost-claim', (m, lease) =>
      m.faults.fail('put', { when: 'after', times: 1, match: lease }),
    );
    await produce(1);
    await eventually(() => metadata.faults.injected === 1);
    const left = await leaseUntil(metadata, 'lost-claim');
    expect(left?.holder).toBeDefined();
    await eventually(() => ackedUpTo(sink, 1)[0] === 1, 30_000);
    // Delivered while the lease the lost claim wrote still ran.
    expect(Date.now()).toBeLessThan(left!.until);
  }, 60_000);

  it('a release that failed: the next run of the process takes the lease over', async () => {
    let leasePuts = 0;
    const { metadata, produce } = await leftLease('lost-release', (m, lease) =>
      // The claim (the first lease write) applies; the release and the run's last try at it fail.
      m.faults.fail('put', { times: 2, match: (k) => lease(k) && ++leasePuts >= 2 }),
    );
    await produce(1);
    await eventually(() => ackedUpTo(sink, 1)[0] === 1 && metadata.faults.injected === 2, 30_000);
    const left = await leaseUntil(metadata, 'lost-release');
    expect(left?.holder).toBeDefined();
    expect(left!.until).toBeGreaterThan(Date.now());
    await produce(2);
    await eventually(() => ackedUpTo(sink, 1)[0] === 2, 30_000);
    expect(Date.now()).toBeLessThan(left!.until);
  }, 60_000);
});
