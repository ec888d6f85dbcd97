import { beforeEach, describe, expect, it } from 'vitest';
import { partitionForKey } from '../../src/wire/murmur2.js';
import { testApp } from '../support/test-app.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('HTTP API (Confluent v3 shapes)', () => {
  let call: ReturnType<typeof testApp>['call'];
  beforeEach(() => {
    ({ call } = testApp({ env: { MAX_REQUEST_BYTES: '200000' } }));
  });

  const createTopic = (name: string, partitions = 1, configs: { name: string; value: string }[] = []) =>
    call('POST', 'topics', { topic_name: name, partitions_count: partitions, configs });

  it('answers a wrong method 405 with Allow, and an unknown path 404', async () => {
    const { app } = testApp();
    const wrong = await app.request('/v3/clusters/local/topics', { method: 'DELETE' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD, POST');
    expect(await wrong.json()).toMatchObject({ error: 'METHOD_NOT_ALLOWED' });
    const alter = await app.request('/v3/clusters/local/topics/t/configs:alter', { method: 'GET' });
    expect([alter.status, alter.headers.get('allow')]).toEqual([405, 'POST']);
    expect((await app.request('/v3/clusters/local/no-such-thing')).status).toBe(404);
  });

  it('lists and describes the cluster; an unknown cluster is 404', async () => {
    const list = await call('GET', '/v3/clusters');
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({
      kind: 'KafkaClusterList',
      data: [{ kind: 'KafkaCluster', cluster_id: 'local' }],
    });
    const cluster = (await call('GET', '/v3/clusters/local')).body;
    expect(cluster.topics.related).toMatch(/\/v3\/clusters\/local\/topics$/);
    // v3's ClusterData requires every relationship, acls among them.
    for (const rel of ['controller', 'acls', 'brokers', 'broker_configs', 'consumer_groups', 'topics'])
      expect(cluster[rel]?.related, rel).toMatch(/^http:\/\/localhost\/v3\/clusters\/local\//);
    expect(cluster.acls.related).toMatch(/\/v3\/clusters\/local\/acls$/);
    expect(cluster.partition_reassignments.related).toMatch(/\/topics\/-\/partitions\/-\/reassignment$/);
    expect(await call('GET', '/v3/clusters/other/topics')).toMatchObject({ status: 404, body: { error_code: 40401 } });
  });

  it('creates (201), lists, describes, grows and deletes (204) topics', async () => {
    const created = await createTopic('orders', 3, [{ name: 'cleanup.policy', value: 'delete' }]);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      kind: 'KafkaTopic',
      topic_name: 'orders',
      partitions_count: 3,
      replication_factor: 1,
    });
    expect(created.body.metadata.self).toMatch(/\/topics\/orders$/);
    expect((await call('GET', 'topics')).body.data.map((t: { topic_name: string }) => t.topic_name)).toEqual([
      'orders',
    ]);
    expect((await call('GET', 'topics/orders')).body.partitions_count).toBe(3);
    expect(await call('PATCH', 'topics/orders', { partitions_count: 5 })).toMatchObject({
      status: 200,
      body: { partitions_count: 5 },
    });
    expect(await call('PATCH', 'topics/orders', { partitions_count: 2 })).toMatchObject({
      status: 400,
      body: { error: 'INVALID_PARTITIONS' },
    });
    expect((await call('DELETE', 'topics/orders')).status).toBe(204);
    expect(await call('GET', 'topics/orders')).toMatchObject({
      status: 404,
      body: { error_code: 40403, error: 'UNKNOWN_TOPIC_OR_PARTITION' },
    });
  });

  it('rejects duplicate topics, bad names, bad partition counts and bad configs with 400/40002', async () => {
    await createTopic('dup');
    expect(await createTopic('dup')).toMatchObject({
      status: 400,
      body: { error_code: 40002, error: 'TOPIC_ALREADY_EXISTS' },
    });
    for (const name of ['', '.', '..', 'has space', 'x'.repeat(250), 'slash/no']) {
      expect(await createTopic(name)).toMatchObject({
        status: 400,
        body: { error_code: 40002, error: 'INVALID_TOPIC_EXCEPTION' },
      });
    }
    expect(await createTopic('x'.repeat(249))).toMatchObject({ status: 201 });
    expect(await createTopic('zero', 0)).toMatchObject({ status: 400, body: { error: 'INVALID_PARTITIONS' } });
    expect(await createTopic('badcfg', 1, [{ name: 'retention.ms', value: 'soon' }])).toMatchObject({
      status: 400,
      body: { error_code: 40002, error: 'INVALID_CONFIG' },
    });
    expect(await createTopic('unknowncfg', 1, [{ name: 'no.such.config', value: '1' }])).toMatchObject({
      status: 400,
      body: { error: 'INVALID_CONFIG' },
    });
    expect(await call('POST', 'topics', { topic_name: 'rf', replication_factor: 3 })).toMatchObject({
      status: 400,
      body: { error: 'INVALID_REPLICATION_FACTOR' },
    });
    // Nothing of the rejected requests was created.
    expect((await call('GET', 'topics')).body.data.map((t: { topic_name: string }) => t.topic_name).sort()).toEqual([
      'dup',
      'x'.repeat(249),
    ]);
  });

  it('lists, alters, reads, sets and resets topic configs', async () => {
    await createTopic('cfg');
    const list = await call('GET', 'topics/cfg/configs');
    const retention = list.body.data.find((c: { name: string }) => c.name === 'retention.ms');
    expect(retention).toMatchObject({
      kind: 'KafkaTopicConfig',
      value: '604800000',
      is_default: true,
      source: 'DEFAULT_CONFIG',
    });
    expect(
      (
        await call('POST', 'topics/cfg/configs:alter', {
          data: [
            { name: 'retention.ms', value: '1000' },
            { name: 'cleanup.policy', value: 'compact' },
          ],
        })
      ).status,
    ).toBe(204);
    expect((await call('GET', 'topics/cfg/configs/retention.ms')).body).toMatchObject({
      value: '1000',
      is_default: false,
      source: 'DYNAMIC_TOPIC_CONFIG',
    });
    expect((await call('PUT', 'topics/cfg/configs/retention.ms', { value: '2000' })).status).toBe(204);
    expect((await call('GET', 'topics/cfg/configs/retention.ms')).body.value).toBe('2000');
    expect((await call('DELETE', 'topics/cfg/configs/retention.ms')).status).toBe(204);
    expect((await call('GET', 'topics/cfg/configs/retention.ms')).body).toMatchObject({
      value: '604800000',
      is_default: true,
    });
    // All or nothing: one bad entry leaves the others unapplied.
    const bad = await call('POST', 'topics/cfg/configs:alter', {
      data: [
        { name: 'retention.ms', value: '5' },
        { name: 'segment.bytes', value: '-3' },
      ],
    });
    expect(bad).toMatchObject({ status: 400, body: { error: 'INVALID_CONFIG' } });
    expect((await call('GET', 'topics/cfg/configs/retention.ms')).body.value).toBe('604800000');
    expect(await call('GET', 'topics/cfg/configs/nope')).toMatchObject({ status: 404 });
  });

  it('accepts every standard Kafka topic config, describes it with its source, and applies 3.x timestamp bounds', async () => {
    const created = await createTopic('manifest', 1, [
      { name: 'segment.jitter.ms', value: '60000' },
      { name: 'flush.messages', value: '10000' },
      { name: 'remote.storage.enable', value: 'false' },
      { name: 'message.timestamp.difference.max.ms', value: '60000' },
    ]);
    expect(created.status).toBe(201);
    const configs = new Map(
      (await call('GET', 'topics/manifest/configs')).body.data.map((c: { name: string }) => [c.name, c]),
    );
    expect(configs.get('segment.jitter.ms')).toMatchObject({ value: '60000', source: 'DYNAMIC_TOPIC_CONFIG' });
    expect(configs.get('flush.ms')).toMatchObject({ value: '9223372036854775807', source: 'DEFAULT_CONFIG' });
    expect(configs.get('message.timestamp.difference.max.ms')).toMatchObject({ value: '60000' });
    expect(configs.has('message.format.version')).toBe(false); // removed in Kafka 4.0, not set here
    // Kafka 3.x's difference bounds a timestamp in the past too (before.max.ms is not set).
    const old = new Date(Date.now() - 3_600_000).toISOString();
    expect(await call('POST', 'topics/manifest/records', { value: { data: 1 }, timestamp: old })).toMatchObject({
      status: 400,
      body: { error: 'INVALID_TIMESTAMP' },
    });
    expect((await call('POST', 'topics/manifest/records', { value: { data: 1 } })).status).toBe(200);
    expect(await createTopic('jitter', 1, [{ name: 'segment.jitter.ms', value: '-1' }])).toMatchObject({
      status: 400,
      body: { error: 'INVALID_CONFIG' },
    });
  });

  it('produces one record and reads it back with key, value, headers and timestamp', async () => {
    await createTopic('one', 1);
    const res = await call('POST', 'topics/one/records', {
      key: { type: 'STRING', data: 'k1' },
      value: { type: 'JSON', data: { n: 1, s: 'é' } },
      headers: [{ name: 'h', value: b64('hv') }],
      timestamp: '2024-01-02T03:04:05.006Z',
    });
    expect(res).toMatchObject({
      status: 200,
      body: {
        error_code: 200,
        topic_name: 'one',
        partition_id: 0,
        offset: 0,
        timestamp: '2024-01-02T03:04:05.006Z',
        key: { type: 'STRING', size: 2 },
      },
    });
    const fetched = await call('GET', 'topics/one/partitions/0/records?offset=0&format=json');
    expect(fetched.body).toMatchObject({ next_offset: 1, high_watermark: 1, log_start_offset: 0 });
    expect(fetched.body.records).toEqual([
      {
        partition_id: 0,
        offset: 0,
        timestamp: '2024-01-02T03:04:05.006Z',
        key: { type: 'STRING', data: 'k1' }, // "k1" is not JSON: the STRING it was produced as
        value: { type: 'JSON', data: { n: 1, s: 'é' } },
        headers: [{ name: 'h', value: b64('hv') }],
      },
    ]);
    const asBinary = await call('GET', 'topics/one/partitions/0/records?offset=0');
    expect(asBinary.body.records[0].value).toEqual({ type: 'BINARY', data: b64('{"n":1,"s":"é"}') });
  });

  it('format=json shows JSON as JSON, other text as STRING and bytes that are not UTF-8 as BINARY', async () => {
    await createTopic('shown', 1);
    const notUtf8 = Buffer.from([0xff, 0xfe, 0x00]).toString('base64');
    const res = await call('POST', 'topics/shown/records', {
      key: { type: 'STRING', data: 'alice' },
      value: { type: 'BINARY', data: notUtf8 },
    });
    expect(res.status).toBe(200);
    const [record] = (await call('GET', 'topics/shown/partitions/0/records?offset=0&format=json')).body.records;
    expect(record.key).toEqual({ type: 'STRING', data: 'alice' });
    expect(record.value).toEqual({ type: 'BINARY', data: notUtf8 });
  });

  it('answers a batch with 207, per-entry successes and failures, and appends only the good ones', async () => {
    await createTopic('batch', 4);
    const entries = [
      ...Array.from({ length: 1500 }, (_, i) => ({
        id: `ok${i}`,
        key: { type: 'STRING', data: `key-${i % 7}` },
        value: { type: 'STRING', data: `v${i}` },
      })),
      { id: 'badpart', partition_id: 9, value: { type: 'STRING', data: 'x' } },
      { id: 'badb64', value: { type: 'BINARY', data: '***' } },
      { id: 'avro', value: { type: 'AVRO', data: {} } },
      { id: 'schema', value: { schema_id: 1, data: {} } },
    ];
    const res = await call('POST', 'topics/batch/records:batch', { entries });
    expect(res.status).toBe(207);
    expect(res.body.successes).toHaveLength(1500);
    expect(
      Object.fromEntries(res.body.failures.map((f: { id: string; error_code: number }) => [f.id, f.error_code])),
    ).toEqual({
      badpart: 40403,
      badb64: 40001,
      avro: 40001,
      schema: 40001,
    });
    // Keyed records land where a Java producer's default partitioner would put them.
    for (const s of res.body.successes.slice(0, 20)) {
      const i = Number(s.id.slice(2));
      expect(s.partition_id).toBe(partitionForKey(Buffer.from(`key-${i % 7}`), 4));
    }
    let total = 0;
    for (let p = 0; p < 4; p++) total += (await call('GET', `topics/batch/partitions/${p}`)).body.high_watermark;
    expect(total).toBe(1500);
    // Offsets within a partition follow entry order.
    const p0 = res.body.successes
      .filter((s: { partition_id: number }) => s.partition_id === 0)
      .map((s: { offset: number }) => s.offset);
    expect(p0).toEqual(p0.map((_: number, i: number) => i));
  });

  it('answers a batch with reports whose text is the JSON of their fields, for any id', async () => {
    const ids = ['plain', 'quo"te\\back', 'new\nline', 'clé 😀', '\ud800 lone', 7];
    const body = JSON.stringify({
      entries: [
        ...ids.map((id, i) => ({
          id,
          ...(i % 2 ? { key: { type: 'JSON', data: { k: 1 } } } : {}),
          value: { type: 'STRING', data: 'v' },
        })),
        { id: 'bad', partition_id: 5, value: null },
      ],
    });
    const { app } = testApp();
    await app.request('/v3/clusters/local/topics', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ topic_name: 'reports', partitions_count: 1 }),
    });
    const res = await app.request('/v3/clusters/local/topics/reports/records:batch', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(207);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const text = await res.text();
    const answer = JSON.parse(text);
    expect(text).toBe(JSON.stringify(answer));
    expect(answer.successes.map((s: { id: string }) => s.id)).toEqual(
      JSON.parse(body)
        .entries.slice(0, 6)
        .map((e: { id: string | number }) => String(e.id)),
    );
    expect(answer.successes[1]).toEqual({
      id: 'quo"te\\back',
      cluster_id: 'local',
      topic_name: 'reports',
      partition_id: 0,
      offset: 1,
      timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      key: { type: 'JSON', size: 7 },
      value: { type: 'STRING', size: 1 },
    });
    expect(answer.successes[0].key).toBeNull();
    expect(answer.failures).toEqual([expect.objectContaining({ id: 'bad', error_code: 40403 })]);
  });

  it("answers each report's own offset, across digit counts and partitions in turn", async () => {
    await createTopic('offsets', 2);
    const expected = [0, 0];
    for (const count of [7, 230]) {
      const entries = Array.from({ length: count }, (_, i) => ({
        id: `${count}-${i}`,
        partition_id: i < 150 ? 0 : i % 2,
        value: { type: 'STRING', data: 'v' },
      }));
      const res = await call('POST', 'topics/offsets/records:batch', { entries });
      expect(res.status).toBe(207);
      expect(
        res.body.successes.map((s: { id: string; partition_id: number; offset: number }) => [
          s.id,
          s.partition_id,
          s.offset,
        ]),
      ).toEqual(entries.map((e) => [e.id, e.partition_id, expected[e.partition_id]!++]));
    }
  });

  it('answers every entry of a partition whose append failed with its error, the others with their offsets', async () => {
    await createTopic('halves', 3, [{ name: 'max.message.bytes', value: '2000' }]);
    // Partition 1's entries are refused whole (one record is too large); 0 and 2 are appended.
    const entries = Array.from({ length: 9 }, (_, i) => ({
      id: `e${i}`,
      partition_id: i % 3,
      value: { type: 'STRING', data: i === 4 ? 'x'.repeat(3000) : `v${i}` },
    }));
    const first = await call('POST', 'topics/halves/records:batch', { entries });
    const again = await call('POST', 'topics/halves/records:batch', {
      entries: entries.filter((e) => e.partition_id !== 1),
    });
    expect(first.status).toBe(207);
    const reports = (r: { body: { successes: { id: string; partition_id: number; offset: number }[] } }) =>
      r.body.successes.map((s) => [s.id, s.partition_id, s.offset]);
    expect(reports(first)).toEqual([
      ['e0', 0, 0],
      ['e2', 2, 0],
      ['e3', 0, 1],
      ['e5', 2, 1],
      ['e6', 0, 2],
      ['e8', 2, 2],
    ]);
    expect(first.body.failures.map((f: { id: string; error_code: number }) => [f.id, f.error_code])).toEqual([
      ['e1', 41301],
      ['e4', 41301],
      ['e7', 41301],
    ]);
    expect(reports(again).map(([, p, o]) => [p, o])).toEqual([
      [0, 3],
      [2, 3],
      [0, 4],
      [2, 4],
      [0, 5],
      [2, 5],
    ]);
    expect((await call('GET', 'topics/halves/partitions/1')).body.high_watermark).toBe(0);
  });

  it('sends keyless records of one request to one partition (sticky), moving on across requests', async () => {
    await createTopic('sticky', 3);
    const parts = new Set<number>();
    for (let i = 0; i < 3; i++) {
      const res = await call('POST', 'topics/sticky/records:batch', {
        entries: [1, 2, 3].map((j) => ({ id: String(j), value: { data: j } })),
      });
      const ps = new Set(res.body.successes.map((s: { partition_id: number }) => s.partition_id));
      expect(ps.size).toBe(1);
      parts.add([...ps][0] as number);
    }
    expect(parts.size).toBe(3);
  });

  it('maps errors to Confluent statuses and codes, without stack traces', async () => {
    await createTopic('errs', 1, [{ name: 'max.message.bytes', value: '1000' }]);
    expect(await call('POST', 'topics/nope/records', { value: { data: 1 } })).toMatchObject({
      status: 404,
      body: { error_code: 40403 },
    });
    expect(await call('POST', 'topics/errs/records', '{"value": ')).toMatchObject({
      status: 400,
      body: { error: 'BAD_REQUEST' },
    });
    expect(
      await call('POST', 'topics/errs/records', { value: { type: 'STRING', data: 'x'.repeat(2000) } }),
    ).toMatchObject({
      status: 413,
      body: { error: 'MESSAGE_TOO_LARGE' },
    });
    expect(await call('POST', 'topics/errs/records', { value: { data: 1 }, timestamp: 'yesterday' })).toMatchObject({
      status: 400,
      body: { error: 'INVALID_TIMESTAMP' },
    });
    expect(await call('GET', 'topics/errs/partitions/0/records?offset=3')).toMatchObject({
      status: 416,
      body: { error: 'OFFSET_OUT_OF_RANGE' },
    });
    expect(await call('GET', 'topics/errs/partitions/x/records')).toMatchObject({ status: 400 });
    expect(await call('GET', 'topics/errs/partitions/1')).toMatchObject({ status: 404, body: { error_code: 40403 } });
    const huge = await call('POST', 'topics/errs/records:batch', {
      entries: [{ id: '1', value: { data: 'y'.repeat(300_000) } }],
    });
    expect(huge).toMatchObject({ status: 413, body: { error_code: 41300 } });
    const dupIds = await call('POST', 'topics/errs/records:batch', {
      entries: [
        { id: '1', value: { data: 1 } },
        { id: '1', value: { data: 2 } },
      ],
    });
    expect(dupIds.status).toBe(400);
    for (const r of [huge, dupIds]) expect(JSON.stringify(r.body)).not.toMatch(/at .*\.ts/);
    // None of the rejected produce requests appended anything.
    expect((await call('GET', 'topics/errs/partitions/0')).body.high_watermark).toBe(0);
  });

  it('describes partitions with leader, replicas, ISR, epoch, log start offset, HW and LEO', async () => {
    await createTopic('desc', 2);
    await call('POST', 'topics/desc/records', { partition_id: 1, value: { data: 1 } });
    const p1 = (await call('GET', 'topics/desc/partitions/1')).body;
    expect(p1).toMatchObject({
      kind: 'KafkaPartition',
      partition_id: 1,
      leader_id: 0,
      replica_ids: [0],
      isr: [0],
      leader_epoch: 0,
      log_start_offset: 0,
      high_watermark: 1,
      log_end_offset: 1,
    });
    expect((await call('GET', 'topics/desc/partitions')).body.data).toHaveLength(2);
  });

  it('lists offsets: earliest, latest and by timestamp', async () => {
    await createTopic('lo', 1);
    for (const [i, ts] of ['2024-01-01T00:00:00Z', '2024-01-02T00:00:00Z', '2024-01-03T00:00:00Z'].entries()) {
      await call('POST', 'topics/lo/records', { value: { data: i }, timestamp: ts });
    }
    expect((await call('GET', 'topics/lo/partitions/0/offset?offset_type=earliest')).body.offset).toBe(0);
    expect((await call('GET', 'topics/lo/partitions/0/offset?offset_type=latest')).body.offset).toBe(3);
    const byTime = await call(
      'GET',
      'topics/lo/partitions/0/offset?offset_type=timestamp&timestamp=2024-01-01T12:00:00Z',
    );
    expect(byTime.body).toMatchObject({ offset: 1, timestamp: '2024-01-02T00:00:00.000Z' });
    const byMs = await call(
      'GET',
      `topics/lo/partitions/0/offset?offset_type=timestamp&timestamp=${Date.parse('2024-01-04T00:00:00Z')}`,
    );
    expect(byMs.body).toMatchObject({ offset: -1, timestamp: null });
  });

  it('serves health and an OpenAPI document', async () => {
    expect(await call('GET', '/health')).toMatchObject({ status: 200, body: { status: 'ok' } });
    const doc = await call('GET', '/openapi.json');
    expect(doc.body.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.body.paths)).toContain('/v3/clusters/{cluster_id}/topics/{topic_name}/records:batch');
    expect(await call('GET', '/nowhere')).toMatchObject({ status: 404, body: { error_code: 40401 } });
  });
});
