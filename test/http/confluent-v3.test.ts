/** Confluent REST Proxy v3 shapes and status codes where the API has the operation. */
import { describe, expect, it } from 'vitest';
import { BASE, testApp } from '../support/test-app.js';

const json = { 'content-type': 'application/json' };

describe('Confluent v3 shapes', () => {
  it("answers partition offsets in Confluent's shape by default, ListOffsets on request", async () => {
    const { call } = testApp();
    await call('POST', 'topics', { topic_name: 't', partitions_count: 1 });
    await call('POST', 'topics/t/records:batch', {
      entries: [
        { id: '1', value: { type: 'STRING', data: 'a' } },
        { id: '2', value: { type: 'STRING', data: 'b' } },
      ],
    });
    const both = await call('GET', 'topics/t/partitions/0/offset');
    expect(both.status).toBe(200);
    expect(both.body).toMatchObject({
      kind: 'KafkaPartitionWithOffsets',
      cluster_id: 'local',
      topic_name: 't',
      partition_id: 0,
      earliest_offset: 0,
      latest_offset: 2,
    });
    expect(both.body.metadata.self).toMatch(/\/v3\/clusters\/local\/topics\/t\/partitions\/0\/offset$/);
    expect((await call('GET', 'topics/t/partitions/0/offset?offset_type=earliest_and_latest')).body.latest_offset).toBe(
      2,
    );
    expect((await call('GET', 'topics/t/partitions/0/offset?offset_type=latest')).body).toMatchObject({
      kind: 'KafkaPartitionOffset',
      offset: 2,
    });
    expect((await call('GET', 'topics/t/partitions/0/offset?offset_type=newest')).status).toBe(400);
  });

  it('answers a validate_only create with 200 and creates nothing', async () => {
    const { call } = testApp();
    const r = await call('POST', 'topics', { topic_name: 'v', partitions_count: 2, validate_only: true });
    expect(r.status).toBe(200);
    expect(r.body.partitions_count).toBe(2);
    expect((await call('GET', 'topics/v')).status).toBe(404);
    expect((await call('POST', 'topics', { topic_name: 'v' })).status).toBe(201);
  });

  it('lists every topic config at topics/-/configs', async () => {
    const { call } = testApp();
    await call('POST', 'topics', { topic_name: 'a', configs: [{ name: 'retention.ms', value: '1000' }] });
    await call('POST', 'topics', { topic_name: 'b' });
    const r = await call('GET', 'topics/-/configs');
    expect(r.status).toBe(200);
    expect(r.body.kind).toBe('KafkaTopicConfigList');
    const retention = r.body.data.filter((d: { name: string }) => d.name === 'retention.ms');
    expect(retention.map((d: { topic_name: string; value: string }) => [d.topic_name, d.value])).toEqual([
      ['a', '1000'],
      ['b', '604800000'],
    ]);
  });

  it('takes replicas_assignments that match the placement and refuses others, creating nothing', async () => {
    const { call } = testApp({ env: { REPLICA_STORES: '3' } });
    const ok = await call('POST', 'topics', {
      topic_name: 'r',
      replicas_assignments: [
        { partition_id: 0, broker_ids: [0, 1] },
        { partition_id: 1, broker_ids: [1, 2] },
        { partition_id: 2, broker_ids: [2, 0] },
      ],
    });
    expect(ok.status).toBe(201);
    expect(ok.body).toMatchObject({ partitions_count: 3, replication_factor: 2 });
    const bad = await call('POST', 'topics', {
      topic_name: 'q',
      replicas_assignments: [{ partition_id: 0, broker_ids: [2, 1] }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('INVALID_REPLICA_ASSIGNMENT');
    expect(bad.body.message).toContain('[0, 1]');
    expect((await call('GET', 'topics/q')).status).toBe(404);
  });

  it("gives consumer groups Confluent's type and is_mixed_consumer_group", async () => {
    const { call } = testApp();
    await call('POST', 'topics', { topic_name: 'g' });
    const hb = await call('POST', 'consumer-groups/grp/consumers:heartbeat', { subscribed_topic_names: ['g'] });
    expect(hb.status).toBe(200);
    const g = await call('GET', 'consumer-groups/grp');
    expect(g.body).toMatchObject({ kind: 'KafkaConsumerGroup', type: 'CONSUMER', is_mixed_consumer_group: false });
  });

  it('produces a stream of records in one body, one delivery report each, in order', async () => {
    const { app, call } = testApp();
    await call('POST', 'topics', { topic_name: 's', partitions_count: 1 });
    const body =
      '{"value":{"type":"STRING","data":"a"}}\n{"value":{"type":"STRING","data":"b}{"}}{"partition_id":9,"value":{"type":"STRING","data":"c"}}';
    const res = await app.request(`${BASE}/topics/s/records`, { method: 'POST', headers: json, body });
    expect(res.status).toBe(200);
    const reports = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(reports.map((r) => [r.error_code, r.offset ?? r.error])).toEqual([
      [200, 0],
      [200, 1],
      [40403, 'UNKNOWN_TOPIC_OR_PARTITION'],
    ]);
    const fetched = await call('GET', 'topics/s/partitions/0/records?offset=0&format=string');
    expect(fetched.body.records.map((r: { value: { data: string } }) => r.value.data)).toEqual(['a', 'b}{']);
  });

  it('refuses a JSON body sent as text/plain with 415, and writes nothing', async () => {
    const { app, call } = testApp();
    await call('POST', 'topics', { topic_name: 'p' });
    const res = await app.request(`${BASE}/topics/p/records`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"value":{"data":1}}',
    });
    expect(res.status).toBe(415);
    expect(((await res.json()) as { error: string }).error).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect((await call('GET', 'topics/p/partitions/0/offset')).body.latest_offset).toBe(0);
  });

  it('refuses a body that is no JSON object or stream of them', async () => {
    const { app, call } = testApp();
    await call('POST', 'topics', { topic_name: 'x' });
    for (const body of ['"text"', '{"value":', '{} junk', '']) {
      const res = await app.request(`${BASE}/topics/x/records`, { method: 'POST', headers: json, body });
      expect(res.status, body).toBe(400);
    }
  });

  it('has an endpoint behind every self and related link it answers with', async () => {
    const { app, call } = testApp({ env: { REPLICA_STORES: '2' } });
    await call('POST', 'topics', { topic_name: 'l', partitions_count: 2, replication_factor: 2 });
    await call('POST', 'topics/l/records', { value: { data: 1 } });
    const hb = await call('POST', 'consumer-groups/lg/consumers:heartbeat', { subscribed_topic_names: ['l'] });
    await call('POST', 'consumer-groups/lg/consumers:heartbeat', {
      member_id: hb.body.member_id,
      member_epoch: hb.body.member_epoch,
      subscribed_topic_names: ['l'],
    });
    await call('POST', 'consumer-groups/lg/offsets:commit', {
      member_id: hb.body.member_id,
      member_epoch: hb.body.member_epoch,
      offsets: [{ topic_name: 'l', partition_id: 0, offset: 1 }],
    });

    const seen = new Set<string>();
    const missing: string[] = [];
    const links = (v: unknown, out: string[]) => {
      if (Array.isArray(v)) for (const x of v) links(x, out);
      else if (v && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
          if ((k === 'self' || k === 'related') && typeof x === 'string') out.push(x);
          else links(x, out);
        }
      }
    };
    // Offsets have no link from the group (v3 has no offsets resource): start there too.
    const queue = [
      'http://localhost/v3/clusters/local',
      'http://localhost/v3/clusters/local/consumer-groups/lg/offsets',
    ];
    while (queue.length > 0 && seen.size < 400) {
      const url = queue.shift()!;
      if (seen.has(url)) continue;
      seen.add(url);
      const res = await app.request(url);
      const body = (await res.json()) as { message?: string };
      // Every link leads to a resource, as in v3: a partition's reassignment (none in progress),
      // a member's lag (no offset committed yet) included.
      if (res.status !== 200) {
        missing.push(`${url}: ${res.status} ${body.message}`);
        continue;
      }
      const found: string[] = [];
      links(body, found);
      queue.push(...found.filter((u) => !seen.has(u)));
    }
    expect(missing).toEqual([]);
    for (const part of [
      '/brokers/0',
      '/brokers/1/configs',
      '/broker-configs',
      '/topics/l/partitions/0/replicas',
      '/consumer-groups/lg/offsets/l/partitions/0',
      '/topics/-/partitions/-/reassignment',
      '/topics/l/partitions/1/reassignment',
      '/consumer-groups/lg/lags/l/partitions/1',
      '/acls',
    ]) {
      expect(
        [...seen].some((u) => u.endsWith(part)),
        part,
      ).toBe(true);
    }
  });
});
