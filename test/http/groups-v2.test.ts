import { describe, expect, it } from 'vitest';
import { groupApp } from '../groups/helpers.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('REST Proxy v2 consumer instances', () => {
  const setup = async (partitions = 2) => {
    const g = groupApp();
    await g.createTopic('t', partitions);
    const v2 = (method: string, path: string, body?: unknown) => g.call(method, `/consumers/${path}`, body);
    const create = async (group: string, body: Record<string, unknown> = {}) => {
      const res = await v2('POST', group, {
        format: 'binary',
        'auto.offset.reset': 'earliest',
        'auto.commit.enable': 'false',
        ...body,
      });
      expect(res.status).toBe(200);
      return res.body as { instance_id: string; base_uri: string };
    };
    return { g, v2, create };
  };

  it('creates an instance, subscribes, polls, commits (offset + 1) and deletes it', async () => {
    const { g, v2, create } = await setup();
    await g.produce('t', 0, 3);
    await g.produce('t', 1, 2);
    const inst = await create('g', { name: 'c1' });
    expect(inst).toEqual({ instance_id: 'c1', base_uri: 'http://localhost/consumers/g/instances/c1' });
    expect(await v2('POST', 'g', { name: 'c1' })).toMatchObject({
      status: 409,
      body: { error: 'CONSUMER_ALREADY_EXISTS', error_code: 40902 },
    });
    expect((await v2('POST', 'g/instances/c1/subscription', { topics: ['t'] })).status).toBe(204);
    expect((await v2('GET', 'g/instances/c1/subscription')).body).toEqual({ topics: ['t'] });
    expect((await v2('GET', 'g/instances/c1/assignments')).body).toEqual({
      partitions: [
        { topic: 't', partition: 0 },
        { topic: 't', partition: 1 },
      ],
    });

    const polled = await v2('GET', 'g/instances/c1/records?timeout=0');
    expect(polled.status).toBe(200);
    expect(polled.body).toHaveLength(5);
    expect(polled.body).toContainEqual({ topic: 't', key: null, value: b64('v0'), partition: 0, offset: 0 });
    expect((await v2('GET', 'g/instances/c1/records?timeout=0')).body).toEqual([]); // positions moved on

    expect(
      (await v2('POST', 'g/instances/c1/offsets', { offsets: [{ topic: 't', partition: 0, offset: 1 }] })).status,
    ).toBe(200);
    expect((await v2('GET', 'g/instances/c1/offsets?topic=t&partition=0')).body).toEqual({
      offsets: [{ topic: 't', partition: 0, offset: 2, metadata: '' }],
    });
    // No body: commit every position (the next offsets to read).
    expect((await v2('POST', 'g/instances/c1/offsets')).status).toBe(200);
    expect(
      (await g.call('GET', 'consumer-groups/g/offsets')).body.data.map(
        (d: { committed_offset: number }) => d.committed_offset,
      ),
    ).toEqual([3, 2]);

    expect((await v2('DELETE', 'g/instances/c1')).status).toBe(204);
    expect(await v2('GET', 'g/instances/c1/records')).toMatchObject({
      status: 404,
      body: { error: 'UNKNOWN_MEMBER_ID' },
    });
    expect((await g.describe('g')).state).toBe('EMPTY');
  });

  it('answers errors in the v2 media type too, as REST Proxy v2 does', async () => {
    const { g, create } = await setup();
    await create('g', { name: 'c1' });
    const request = (method: string, path: string, body?: string) =>
      g.app.request(`/consumers/${path}`, {
        method,
        headers: { 'content-type': 'application/vnd.kafka.v2+json' },
        ...(body === undefined ? {} : { body }),
      });
    const failures = [
      await request('POST', 'g', JSON.stringify({ format: 'avro' })), // 400
      await request('POST', 'g', JSON.stringify({ name: 'c1' })), // 409
      await request('GET', 'g/instances/nobody/subscription'), // 404
      await request('GET', 'g/instances/nobody/records?timeout=0'), // 404
      await request('POST', 'g/instances/c1/offsets', '{not json'), // 400
      await request('POST', 'g/instances/c1/positions', JSON.stringify({ offsets: 'none' })), // 400
      await request('DELETE', 'g/instances/nobody'), // 404
    ];
    expect(failures.map((r) => [r.status, r.headers.get('content-type')])).toEqual([
      [400, 'application/vnd.kafka.v2+json'],
      [409, 'application/vnd.kafka.v2+json'],
      [404, 'application/vnd.kafka.v2+json'],
      [404, 'application/vnd.kafka.v2+json'],
      [400, 'application/vnd.kafka.v2+json'],
      [400, 'application/vnd.kafka.v2+json'],
      [404, 'application/vnd.kafka.v2+json'],
    ]);
    // REST Proxy's code for a consumer instance it does not know, on every route that names one.
    for (const i of [2, 3, 6])
      expect(await failures[i]!.json()).toMatchObject({ error_code: 40403, error: 'UNKNOWN_MEMBER_ID' });
  });

  it('shares partitions between instances of a group, and resumes from committed offsets after a member goes', async () => {
    const { g, v2, create } = await setup(2);
    await g.produce('t', 0, 2);
    await g.produce('t', 1, 2);
    await create('g', { name: 'a', 'auto.commit.enable': 'true' });
    await v2('POST', 'g/instances/a/subscription', { topics: ['t'] });
    await create('g', { name: 'b', 'auto.commit.enable': 'true' });
    await v2('POST', 'g/instances/b/subscription', { topics: ['t'] });
    // Heartbeats run on every call; after a few polls each instance owns one partition.
    const seen = new Map<string, number[]>([
      ['a', []],
      ['b', []],
    ]);
    for (let i = 0; i < 4; i++) {
      for (const name of ['a', 'b']) {
        const res = await v2('GET', `g/instances/${name}/records?timeout=0`);
        expect(res.status).toBe(200);
        for (const r of res.body) seen.get(name)!.push(r.partition);
      }
    }
    const a = (await v2('GET', 'g/instances/a/assignments')).body.partitions;
    const b = (await v2('GET', 'g/instances/b/assignments')).body.partitions;
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(1);
    expect(a[0].partition).not.toBe(b[0].partition);
    // Every record was delivered once in all (auto-commit carried a's progress over to b if a partition moved).
    expect([...seen.get('a')!, ...seen.get('b')!].sort()).toEqual([0, 0, 1, 1]);
    expect((await g.describe('g')).state).toBe('STABLE');

    // a leaves; b takes over a's partition from the committed offset, so nothing is read twice.
    await g.produce('t', a[0].partition, 1);
    await v2('GET', 'g/instances/a/records?timeout=0'); // reads the new record and...
    await v2('DELETE', 'g/instances/a'); // ...auto-commits it on the way out
    const rest: number[] = [];
    for (let i = 0; i < 3; i++)
      rest.push(...(await v2('GET', 'g/instances/b/records?timeout=0')).body.map((r: { offset: number }) => r.offset));
    expect(rest).toEqual([]);
    expect((await v2('GET', 'g/instances/b/assignments')).body.partitions).toHaveLength(2);
  });

  it('long-polls: a records request waits for an append and returns as soon as it lands', async () => {
    const { g, v2, create } = await setup(1);
    await create('g', { name: 'c' });
    await v2('POST', 'g/instances/c/subscription', { topics: ['t'] });
    expect((await v2('GET', 'g/instances/c/records?timeout=0')).body).toEqual([]);
    const started = Date.now();
    const poll = v2('GET', 'g/instances/c/records?timeout=5000');
    setTimeout(() => void g.produce('t', 0, 1), 100);
    const res = await poll;
    expect(res.body).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(3000);
    // And with nothing arriving it returns empty after the timeout.
    const t0 = Date.now();
    expect((await v2('GET', 'g/instances/c/records?timeout=200')).body).toEqual([]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
  });

  it('honours auto.offset.reset: latest skips old records, none fails without a committed offset', async () => {
    const { g, v2, create } = await setup(1);
    await g.produce('t', 0, 3);
    await create('g1', { name: 'late', 'auto.offset.reset': 'latest' });
    await v2('POST', 'g1/instances/late/subscription', { topics: ['t'] });
    expect((await v2('GET', 'g1/instances/late/records?timeout=0')).body).toEqual([]);
    await g.produce('t', 0, 1);
    expect(
      (await v2('GET', 'g1/instances/late/records?timeout=0')).body.map((r: { offset: number }) => r.offset),
    ).toEqual([3]);

    await create('g2', { name: 'strict', 'auto.offset.reset': 'none' });
    await v2('POST', 'g2/instances/strict/subscription', { topics: ['t'] });
    expect(await v2('GET', 'g2/instances/strict/records?timeout=0')).toMatchObject({
      status: 416,
      body: { error: 'NO_OFFSET_FOR_PARTITION' },
    });
  });

  it('seeks to offsets, the beginning and the end; json format decodes values', async () => {
    const { g, v2, create } = await setup(1);
    for (let i = 0; i < 3; i++)
      await g.call('POST', 'topics/t/records', { partition_id: 0, value: { type: 'JSON', data: { n: i } } });
    await create('g', { name: 'j', format: 'json' });
    await v2('POST', 'g/instances/j/subscription', { topics: ['t'] });
    expect((await v2('GET', 'g/instances/j/records?timeout=0')).body.map((r: { value: unknown }) => r.value)).toEqual([
      { n: 0 },
      { n: 1 },
      { n: 2 },
    ]);
    expect(
      (await v2('POST', 'g/instances/j/positions', { offsets: [{ topic: 't', partition: 0, offset: 1 }] })).status,
    ).toBe(204);
    expect((await v2('GET', 'g/instances/j/records?timeout=0')).body.map((r: { offset: number }) => r.offset)).toEqual([
      1, 2,
    ]);
    expect(
      (await v2('POST', 'g/instances/j/positions/beginning', { partitions: [{ topic: 't', partition: 0 }] })).status,
    ).toBe(204);
    expect((await v2('GET', 'g/instances/j/records?timeout=0')).body).toHaveLength(3);
    expect((await v2('POST', 'g/instances/j/positions/end', { partitions: [] })).status).toBe(204);
    expect((await v2('GET', 'g/instances/j/records?timeout=0')).body).toEqual([]);
    expect(
      await v2('POST', 'g/instances/j/positions', { offsets: [{ topic: 'other', partition: 0, offset: 1 }] }),
    ).toMatchObject({ status: 400 });
    expect(await v2('POST', 'g', { format: 'avro' })).toMatchObject({ status: 400 });
  });

  it('an idle instance expires like a member whose session timed out', async () => {
    const { g, v2, create } = await setup(1);
    await create('g', { name: 'idle' });
    await v2('POST', 'g/instances/idle/subscription', { topics: ['t'] });
    g.clock.advance(315_000); // consumer.instance.timeout.ms and its unwritten span (three 5 s heartbeat intervals)
    expect((await g.services.groups.coordinator.expireSessions()).membersExpired).toBe(1);
    expect(await g.storage.metadata.get('group#g', 'inst#idle')).toBeUndefined();
    expect(await v2('GET', 'g/instances/idle/records?timeout=0')).toMatchObject({
      status: 404,
      body: { error: 'UNKNOWN_MEMBER_ID' },
    });
    expect((await g.describe('g')).state).toBe('EMPTY');
  });
});
