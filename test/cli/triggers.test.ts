/**
 * `kafka-log triggers` and the admin client's trigger calls: a webhook trigger created, its records
 * delivered by the server, described with each partition's committed offset and lag, paused,
 * resumed, listed and deleted; bad knobs refused with the Kafka error name.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { Kafka } from '../../src/client/index.js';
import { startServer, stopServer, tempDir, type LocalServer } from '../support/local-server.js';
import { eventually, recordValue, startSink, type Sink } from '../triggers/webhook-sink.js';

describe('kafka-log triggers', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let server: LocalServer;
  let kafka: Kafka;
  let sink: Sink;

  const cli = async (args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, {
      out: (l) => out.push(l),
      err: (l) => err.push(l),
      stdin: Readable.from([]),
      env: { KAFKA_LOG_URL: server.origin },
      signal: new AbortController().signal,
    });
    return { code, out, err };
  };

  beforeAll(async () => {
    dir = await tempDir('triggers-cli-');
    server = await startServer(dir.path);
    sink = await startSink();
    kafka = new Kafka({ url: `${server.origin}/v3/clusters/local` });
    await kafka.admin().createTopics({ topics: [{ topic: 'orders', numPartitions: 2 }] });
  }, 60_000);
  afterAll(async () => {
    await stopServer(server);
    await sink.close();
    await dir.remove();
  });

  it("creates a Lambda function's trigger with Lambda's knobs, which the client reads back", async () => {
    const arn = 'arn:aws:lambda:eu-west-1:123456789012:function:orders-consumer';
    await kafka.admin().createTopics({ topics: [{ topic: 'orders-failed', numPartitions: 1 }] });
    const created = await cli([
      'triggers',
      'create',
      '--trigger',
      'fn',
      '--topic',
      'orders',
      '--function-arn',
      arn,
      '--batching-window-ms',
      '0',
      '--maximum-retry-attempts',
      '3',
      '--maximum-record-age-seconds',
      '60',
      '--bisect-batch-on-function-error',
      '--report-batch-item-failures',
      '--on-failure-destination',
      'kafka://orders-failed',
      '--filter-pattern',
      '{"value":{"kind":["order"]}}',
    ]);
    expect(created).toEqual({ code: 0, out: ['Created trigger fn (group trigger.fn).'], err: [] });
    const [d] = await kafka.admin().describeTriggers(['fn']);
    expect(d).toMatchObject({
      target: { type: 'LAMBDA', functionArn: arn, timeoutMs: 30_000 },
      maximumBatchingWindowMs: 0,
      maximumRetryAttempts: 3,
      maximumRecordAgeSeconds: 60,
      bisectBatchOnFunctionError: true,
      functionResponseTypes: ['ReportBatchItemFailures'],
      onFailureDestination: 'kafka://orders-failed',
      filterCriteria: { filters: [{ pattern: '{"value":{"kind":["order"]}}' }] },
    });
    const listed = await cli(['triggers', 'list']);
    expect(listed.out.find((l) => l.startsWith('fn '))).toContain(arn);
    const both = await cli([
      'triggers',
      'create',
      '--trigger',
      'x',
      '--topic',
      'orders',
      '--webhook',
      sink.url,
      '--function-arn',
      arn,
    ]);
    expect(both.code).not.toBe(0);
    expect((await cli(['triggers', 'delete', '--trigger', 'fn'])).code).toBe(0);
  });

  it('creates, describes, pauses, resumes, lists and deletes a webhook trigger', async () => {
    const created = await cli([
      'triggers',
      'create',
      '--trigger',
      'mailer',
      '--topic',
      'orders',
      '--webhook',
      sink.url,
      '--batch-size',
      '10',
      '--starting-position',
      'TRIM_HORIZON',
    ]);
    expect(created).toEqual({ code: 0, out: ['Created trigger mailer (group trigger.mailer).'], err: [] });

    const producer = kafka.producer();
    await producer.send({
      topic: 'orders',
      messages: [
        { partition: 0, value: 'a' },
        { partition: 0, value: 'b' },
        { partition: 1, value: 'c' },
      ],
    });
    await eventually(() => sink.delivered.length >= 3);
    expect(sink.delivered.map(recordValue).sort()).toEqual(['a', 'b', 'c']);

    const admin = kafka.admin();
    await eventually(async () => (await admin.describeTriggers(['mailer']))[0]!.lag === 0);
    const [d] = await admin.describeTriggers(['mailer']);
    expect(d).toMatchObject({ name: 'mailer', topic: 'orders', groupId: 'trigger.mailer', batchSize: 10, lag: 0 });
    expect(d!.partitions.map((p) => [p.partition, p.committedOffset, p.highWatermark, p.lag])).toEqual([
      [0, 2, 2, 0],
      [1, 1, 1, 0],
    ]);

    const described = await cli(['triggers', 'describe', '--trigger', 'mailer']);
    expect(described.code).toBe(0);
    expect(described.out.slice(0, 3)).toEqual([
      '',
      `Trigger 'mailer' (ENABLED) on orders as group trigger.mailer -> ${sink.url}`,
      'PARTITION  COMMITTED  LOG-END  LAG  DELIVERING-UNTIL',
    ]);
    expect(described.out.slice(3)).toEqual([
      '0          2          2        0    -',
      '1          1          1        0    -',
    ]);

    expect((await cli(['triggers', 'pause', '--trigger', 'mailer'])).out).toEqual(['Trigger mailer is PAUSED.']);
    await producer.send({ topic: 'orders', messages: [{ partition: 0, value: 'd' }] });
    // Paused: the commit wakes no delivery, however long it is given.
    await new Promise((r) => setTimeout(r, 300));
    expect(sink.delivered.some((r) => recordValue(r) === 'd')).toBe(false);
    expect((await admin.describeTriggers(['mailer']))[0]!.lag).toBe(1);
    expect((await cli(['triggers', 'resume', '--trigger', 'mailer'])).out).toEqual(['Trigger mailer is ENABLED.']);
    await eventually(() => sink.delivered.some((r) => recordValue(r) === 'd'));
    await producer.disconnect();

    expect((await cli(['triggers', 'list'])).out).toEqual([
      'TRIGGER  TOPIC   GROUP           STATE    TARGET',
      `mailer   orders  trigger.mailer  ENABLED  ${sink.url}`,
    ]);
    expect(await cli(['triggers', 'delete', '--trigger', 'mailer'])).toEqual({
      code: 0,
      out: ['Deleted trigger mailer.'],
      err: [],
    });
    expect(await admin.listTriggers()).toEqual([]);
  });

  it('refuses bad knobs with the Kafka error name and bad usage with exit code 2', async () => {
    const bad = await cli([
      'triggers',
      'create',
      '--trigger',
      't',
      '--topic',
      'orders',
      '--webhook',
      sink.url,
      '--batch-size',
      '20000',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.err[0]).toMatch(/INVALID_REQUEST/);
    expect((await cli(['triggers', 'create', '--trigger', 't', '--topic', 'orders'])).code).toBe(2);
    expect((await cli(['triggers', 'describe'])).code).toBe(2);
    expect(await kafka.admin().listTriggers()).toEqual([]);
  });
});
