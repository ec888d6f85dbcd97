/**
 * Query parameters are parsed by the zod schemas the OpenAPI document lists them with: the routes
 * take what the document says and refuse what it refuses, BAD_REQUEST (400) naming the parameter.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp } from '../support/test-app.js';

const t = testApp();
const RECORDS = '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records';
const OFFSET = '/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/offset';

interface Parameter {
  in: string;
  name: string;
  schema: { type?: string; minimum?: number; enum?: string[] };
}
let doc: { paths: Record<string, Record<string, { parameters?: Parameter[] }>> };
const query = (path: string, method = 'get') => doc.paths[path]![method]!.parameters!.filter((p) => p.in === 'query');

beforeAll(async () => {
  doc = (await t.call('GET', '/openapi.json')).body;
  expect((await t.call('POST', 'topics', { topic_name: 'q', partitions_count: 1 })).status).toBe(201);
  expect((await t.call('POST', 'topics/q/records', { value: { type: 'STRING', data: 'v' } })).status).toBe(200);
});

describe('query parameters', () => {
  it("the document lists each route's parameters from the schema the route parses", () => {
    expect(query(RECORDS).map((p) => [p.name, p.schema.type])).toEqual([
      ['offset', 'integer'],
      ['max_bytes', 'integer'],
      ['format', 'string'],
      ['min_bytes', 'integer'],
      ['max_wait_ms', 'integer'],
      ['isolation_level', 'string'],
    ]);
    expect(query(OFFSET).map((p) => p.name)).toEqual(['offset_type', 'timestamp', 'isolation_level']);
  });

  it('the fetch refuses what the document refuses: below a minimum, not an integer, not in the enum', async () => {
    const bad: string[] = [];
    for (const p of query(RECORDS)) {
      if (p.schema.minimum !== undefined) bad.push(`${p.name}=${p.schema.minimum - 1}`, `${p.name}=1e3`, `${p.name}=x`);
      if (p.schema.enum) bad.push(`${p.name}=bogus`);
    }
    expect(bad).toContain('max_bytes=0');
    for (const q of bad) {
      const res = await t.call('GET', `topics/q/partitions/0/records?${q}`);
      expect([q, res.status, res.body.error]).toEqual([q, 400, 'BAD_REQUEST']);
      expect(res.body.message).toContain(q.split('=')[0]);
    }
    // What it takes, it answers.
    const ok = await t.call('GET', 'topics/q/partitions/0/records?offset=0&max_bytes=1&format=string');
    expect(ok.status).toBe(200);
    expect(ok.body.records.map((r: { value: unknown }) => r.value)).toEqual([{ type: 'STRING', data: 'v' }]);
  });

  it('list offsets, transactions and group offsets refuse a bad value as BAD_REQUEST', async () => {
    for (const path of [
      'topics/q/partitions/0/offset?offset_type=bogus',
      'topics/q/partitions/0/offset?isolation_level=bogus',
      'transactions?producer_id=x',
      'transactions:hanging?older_than_ms=-1',
      'consumer-groups/g/offsets?partition_id=x',
    ]) {
      const res = await t.call('GET', path);
      expect([path, res.status, res.body.error]).toEqual([path, 400, 'BAD_REQUEST']);
    }
    expect((await t.call('GET', 'topics/q/partitions/0/offset?offset_type=latest')).body.offset).toBe(1);
    expect((await t.call('GET', 'transactions?producer_id=1&producer_id=2')).status).toBe(200);
  });
});
