/**
 * Lambda's delivery knobs, applied: the batching window (a short batch waits for more commits, a
 * full one goes at once), MaximumRetryAttempts (then the offset moves on), BisectBatchOnFunctionError
 * (the poison record isolated, the good ones around it delivered), MaximumRecordAgeInSeconds (an
 * old record never sent), and the on-failure destination: records given up on are produced to the
 * failure topic with headers saying why, before the offset moves past them, also when that produce
 * fails or its answer is lost (at least once there, nothing lost).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createStorage } from '../../src/compose.js';
import { clogPk, partitionPk } from '../../src/storage/key-layout.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { eventually, recordValue, startSink, type Sink } from './webhook-sink.js';

describe('trigger delivery knobs', () => {
  let sink: Sink;
  let t: ReturnType<typeof testApp>;

  afterEach(async () => {
    await t.services.triggers.runner.close();
    await sink.close();
  });

  async function setup(
    topic: string,
    knobs: Record<string, unknown>,
    storage = createStorage({ kind: 'memory', replicaStores: 1 }),
  ) {
    sink = await startSink();
    t = testApp({ storage, runTriggers: true });
    for (const name of [topic, `${topic}-dlt`])
      expect((await t.call('POST', 'topics', { topic_name: name, partitions_count: 1 })).status).toBe(201);
    const created = await t.call('POST', 'triggers', {
      trigger_name: `${topic}-hook`,
      topic_name: topic,
      target: { type: 'WEBHOOK', url: sink.url, timeout_ms: 2000 },
      maximum_batching_window_ms: 0,
      ...knobs,
    });
    expect(created.status).toBe(201);
    return created.body;
  }

  const produce = async (topic: string, value: string, timestamp?: number) =>
    expect(
      (
        await t.call('POST', `topics/${topic}/records`, {
          partition_id: 0,
          value: { type: 'STRING', data: value },
          ...(timestamp !== undefined && { timestamp: new Date(timestamp).toISOString() }),
        })
      ).status,
    ).toBe(200);

  /** Several records in one batch: produced while the trigger is paused. */
  async function produceBatch(topic: string, values: string[]) {
    await t.services.triggers.admin.pause(`${topic}-hook`);
    for (const v of values) await produce(topic, v);
    await t.services.triggers.admin.resume(`${topic}-hook`);
  }

  const lag = async (topic: string) => (await t.call('GET', `triggers/${topic}-hook`)).body.lag as number;
  const values = (e: Sink['events'][number]) => Object.values(e.records).flatMap((rs) => rs.map(recordValue));
  const failureTopic = async (topic: string) => {
    const read = await t.call('GET', `topics/${topic}-dlt/partitions/0/records?offset=0`);
    return ((read.body.records ?? []) as { value: { data: string }; headers: { name: string; value: string }[] }[]).map(
      (r) => ({ ...r, value: Buffer.from(r.value.data, 'base64').toString() }),
    );
  };
  const header = (r: { headers: { name: string; value: string }[] }, name: string) => {
    const h = r.headers.find((x) => x.name === name);
    return h ? Buffer.from(h.value, 'base64').toString() : undefined;
  };
  const failsOn = (bad: string) => (event: Sink['events'][number]) =>
    values(event).includes(bad) ? { status: 500 } : {};

  it('batching window: a short batch waits for commits, and goes once it is full', async () => {
    const created = await setup('win', { maximum_batching_window_ms: 60_000, batch_size: 2 });
    expect(created.maximum_batching_window_ms).toBe(60_000);
    await produce('win', 'a');
    await new Promise((r) => setTimeout(r, 300));
    expect(sink.events).toEqual([]); // within the window, one record short
    await produce('win', 'b');
    await eventually(() => sink.delivered.length >= 2);
    expect(sink.events.map(values)).toEqual([['a', 'b']]);
  });

  it('batching window with ordering KEY: a lane short of a batch waits for commits, and goes once it is full', async () => {
    await setup('kwin', { maximum_batching_window_ms: 60_000, batch_size: 2, ordering: 'KEY', key_lanes: 4 });
    const keyed = async (key: string, value: string) =>
      expect(
        (
          await t.call('POST', 'topics/kwin/records', {
            partition_id: 0,
            key: { type: 'STRING', data: key },
            value: { type: 'STRING', data: value },
          })
        ).status,
      ).toBe(200);
    await keyed('k', 'a');
    await new Promise((r) => setTimeout(r, 300));
    expect(sink.events).toEqual([]); // within the window, one record short
    await keyed('k', 'b');
    await eventually(() => sink.delivered.length >= 2);
    expect(sink.events.map(values)).toEqual([['a', 'b']]);
  });

  it('MaximumRetryAttempts: retried that many times, then dropped (no destination) and the offset moves on', async () => {
    await setup('retry', { maximum_retry_attempts: 2 });
    sink.answer = failsOn('bad');
    await produce('retry', 'bad');
    await eventually(async () => (await lag('retry')) === 0);
    expect(sink.events.map(values)).toEqual([['bad'], ['bad'], ['bad']]);
    await produce('retry', 'good');
    await eventually(() => sink.delivered.length >= 1);
    expect(sink.delivered.map(recordValue)).toEqual(['good']);
  });

  describe('retries after partial batch responses count against MaximumRetryAttempts', () => {
    const partial = { function_response_types: ['ReportBatchItemFailures'] };
    /** Answers every batch by naming its records whose value is in `bad` as failed. */
    const naming = (topic: string, bad: string[]) => (event: Sink['events'][number]) => {
      const failed = event.records[`${topic}-0`]!.filter((r) => bad.includes(recordValue(r)!));
      return {
        body: {
          batchItemFailures: failed.map((r) => ({ itemIdentifier: { partition: `${topic}-0`, offset: r.offset } })),
        },
      };
    };

    it('0 retries: the records a partial response names go to the failure topic at once', async () => {
      await setup('pr0', {
        ...partial,
        batch_size: 10,
        maximum_retry_attempts: 0,
        on_failure_destination: 'kafka://pr0-dlt',
      });
      sink.answer = naming('pr0', ['b', 'd']);
      await produceBatch('pr0', ['a', 'b', 'c', 'd', 'e']);
      await eventually(async () => (await lag('pr0')) === 0);
      expect(sink.events.map(values)).toEqual([['a', 'b', 'c', 'd', 'e']]);
      const failed = await failureTopic('pr0');
      expect(failed.map((r) => r.value)).toEqual(['b', 'd']);
      expect(header(failed[0]!, 'trigger.failure.reason')).toBe('RetriesExhausted');
      expect(header(failed[0]!, 'trigger.failure.attempts')).toBe('1');
    });

    it('the partial response is the first failed attempt of the records retried from it', async () => {
      await setup('pr2', {
        ...partial,
        batch_size: 10,
        maximum_retry_attempts: 2,
        on_failure_destination: 'kafka://pr2-dlt',
      });
      sink.answer = naming('pr2', ['c']);
      await produceBatch('pr2', ['a', 'b', 'c', 'd']);
      await eventually(async () => (await lag('pr2')) === 0);
      // The first invocation and two retries, not three.
      expect(sink.events.map(values)).toEqual([
        ['a', 'b', 'c', 'd'],
        ['c', 'd'],
        ['c', 'd'],
      ]);
      const failed = await failureTopic('pr2');
      expect(failed.map((r) => r.value)).toEqual(['c', 'd']);
      expect(header(failed[0]!, 'trigger.failure.attempts')).toBe('3');
    });

    it('responses that each move the batch on still use up its retries', async () => {
      await setup('prm', {
        ...partial,
        batch_size: 10,
        maximum_retry_attempts: 2,
        on_failure_destination: 'kafka://prm-dlt',
      });
      // Each batch's second record fails: the batch moves on by one record per invocation.
      sink.answer = (event) => {
        const rs = event.records['prm-0']!;
        return rs.length < 2
          ? {}
          : { body: { batchItemFailures: [{ itemIdentifier: { partition: 'prm-0', offset: rs[1]!.offset } }] } };
      };
      await produceBatch('prm', ['a', 'b', 'c', 'd', 'e', 'f']);
      await eventually(async () => (await lag('prm')) === 0);
      expect(sink.events.map(values)).toEqual([
        ['a', 'b', 'c', 'd', 'e', 'f'],
        ['b', 'c', 'd', 'e', 'f'],
        ['c', 'd', 'e', 'f'],
      ]);
      // Out of retries after the third: the record it named goes to the failure topic, the rest succeeded.
      expect((await failureTopic('prm')).map((r) => r.value)).toEqual(['d']);
    });
  });

  it('bisect and failure topic: the poison record isolated, retried, produced to the failure topic with why; the rest delivered', async () => {
    await setup('bis', {
      batch_size: 10,
      bisect_batch_on_function_error: true,
      maximum_retry_attempts: 1,
      on_failure_destination: 'kafka://bis-dlt',
    });
    sink.answer = failsOn('poison');
    await produceBatch('bis', ['a', 'poison', 'c', 'd']);
    await eventually(async () => (await lag('bis')) === 0);
    expect(sink.events.map(values)).toEqual([
      ['a', 'poison', 'c', 'd'],
      ['a', 'poison'],
      ['a'], // succeeded: committed through it, the rest read again
      ['poison', 'c', 'd'],
      ['poison', 'c'],
      ['poison'], // cannot be split: a failure that counts
      ['poison'], // the one retry
      ['c', 'd'],
    ]);
    expect(sink.delivered.map(recordValue)).toEqual(['a', 'c', 'd']);
    const failed = await failureTopic('bis');
    expect(failed).toHaveLength(1);
    expect(failed[0]!.value).toBe('poison');
    expect(header(failed[0]!, 'trigger.failure.reason')).toBe('RetriesExhausted');
    expect(header(failed[0]!, 'trigger.failure.attempts')).toBe('2');
    expect(header(failed[0]!, 'trigger.failure.error')).toMatch(/^HTTP 500/);
    expect(header(failed[0]!, 'trigger.source.topic')).toBe('bis');
    expect(header(failed[0]!, 'trigger.source.offset')).toBe('1');
    expect(header(failed[0]!, 'trigger.name')).toBe('bis-hook');
  });

  it('an infinite retry with a failure topic is 10 retries, as Lambda applies it', async () => {
    await setup('inf', { on_failure_destination: 'kafka://inf-dlt' });
    sink.answer = () => ({ status: 500 });
    await produce('inf', 'x');
    await eventually(async () => (await failureTopic('inf')).length === 1, 60_000);
    expect(sink.events).toHaveLength(11);
    await eventually(async () => (await lag('inf')) === 0);
  }, 90_000);

  it('MaximumRecordAgeInSeconds: an older record is never sent, it goes to the failure topic', async () => {
    await setup('age', { maximum_record_age_seconds: 60, on_failure_destination: 'kafka://age-dlt', batch_size: 10 });
    await t.services.triggers.admin.pause('age-hook');
    await produce('age', 'old', Date.now() - 120_000);
    await produce('age', 'new');
    await t.services.triggers.admin.resume('age-hook');
    await eventually(async () => (await lag('age')) === 0);
    expect(sink.events.map(values)).toEqual([['new']]);
    const failed = await failureTopic('age');
    expect(failed.map((r) => r.value)).toEqual(['old']);
    expect(header(failed[0]!, 'trigger.failure.reason')).toBe('RecordAgeExceeded');
  });

  it('refuses a failure topic that is the source, or that does not exist', async () => {
    await setup('ref', {});
    const mk = (on_failure_destination: string) =>
      t.call('POST', 'triggers', {
        trigger_name: 'ref-2',
        topic_name: 'ref',
        target: { type: 'WEBHOOK', url: sink.url },
        on_failure_destination,
      });
    expect((await mk('kafka://ref')).status).toBe(400);
    expect((await mk('kafka://nope')).status).toBe(404);
    expect((await mk('sqs://queue')).status).toBe(400);
  });

  it.each(['before', 'after', 'retried'] as const)(
    'a failure-topic produce that fails %s it applies: the records reach it at least once, the offset moves on only after',
    async (when) => {
      const base = createStorage({ kind: 'memory', replicaStores: 1 });
      const metadata = new FaultyMetadataStore(base.metadata);
      await setup(
        'lost',
        { maximum_retry_attempts: 0, on_failure_destination: 'kafka://lost-dlt', batch_size: 1 },
        {
          ...base,
          metadata,
        },
      );
      sink.answer = failsOn('poison');
      // The failure topic's commit point: its partition state, or its shard's log entry (feature level 9).
      const dltState = (k: string) =>
        k.startsWith(`${partitionPk('lost-dlt', 0)}|`) || k.startsWith(`${clogPk('lost-dlt', 0)}|e#`);
      metadata.faults.fail('put', { when, times: 2, match: dltState });
      await produce('lost', 'poison');
      await produce('lost', 'fine');
      await eventually(() => sink.delivered.length >= 1, 20_000);
      await eventually(async () => (await lag('lost')) === 0, 20_000);
      expect(metadata.faults.injected).toBeGreaterThanOrEqual(1);
      const failed = await failureTopic('lost');
      expect(failed.length).toBeGreaterThanOrEqual(1);
      expect(new Set(failed.map((r) => r.value))).toEqual(new Set(['poison']));
      expect(sink.delivered.map(recordValue)).toEqual(['fine']);
    },
    30_000,
  );
});
