/**
 * Real answers against the OpenAPI document: a scenario calls every operation of the document
 * through the app; each answer's status must be one the operation documents, its media type one
 * the status documents, and its JSON body must validate (ajv, JSON Schema 2020-12, as OpenAPI 3.1)
 * against the documented schema. An operation the scenario never reaches fails the test: a new
 * operation needs a step here.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/http/openapi.js';
import { encodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE } from '../../src/wire/produce-request.js';
import { encodeRecordBatch } from '../../src/wire/record-batch.js';
import { testApp } from '../support/test-app.js';

type Json = Record<string, any>;
const doc = openApiDocument as unknown as {
  paths: Record<string, Record<string, Json>>;
  components: { schemas: Record<string, Json> };
};
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

const operations = Object.entries(doc.paths)
  .flatMap(([template, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({
      key: `${method.toUpperCase()} ${template}`,
      method: method.toUpperCase(),
      template,
      op: item[method]!,
      // Literal segments first: `/topics/-/configs` is its own operation, not `/topics/{topic_name}/configs`.
      literals: template.split('/').filter((s) => s !== '' && !s.startsWith('{')).length,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    })),
  )
  .sort((a, b) => b.literals - a.literals);

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: 'components', components: { schemas: doc.components.schemas } });
const compiled = new Map<object, ReturnType<typeof ajv.compile>>();
const validate = (schema: Json, body: unknown) => {
  const resolved = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"components#/components/'));
  let v = compiled.get(schema);
  if (!v) compiled.set(schema, (v = ajv.compile(resolved)));
  return v(body)
    ? []
    : (v.errors ?? []).map((e: { instancePath: string; message?: string }) => `${e.instancePath} ${e.message}`);
};

describe('every operation answers as the OpenAPI document says', () => {
  it('runs the scenario and checks each answer', async () => {
    const { app } = testApp({ env: { REPLICA_STORES: '2' } });
    const reached = new Set<string>();
    const problems: string[] = [];
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const isBytes = body instanceof Uint8Array;
      const res = await app.request(path, {
        method,
        headers: { ...(body !== undefined && !isBytes ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body !== undefined ? { body: isBytes ? (body as Uint8Array<ArrayBuffer>) : JSON.stringify(body) } : {}),
      });
      const url = new URL(path, 'http://localhost');
      const match = operations.find((o) => o.method === method && o.pattern.test(url.pathname));
      if (!match) {
        problems.push(`${method} ${url.pathname}: no operation`);
        return { status: res.status, body: undefined as any };
      }
      reached.add(match.key);
      const type = (res.headers.get('content-type') ?? '').split(';')[0]!;
      const raw = Buffer.from(await res.arrayBuffer());
      const documented = match.op.responses[String(res.status)];
      if (!documented) problems.push(`${match.key}: status ${res.status} is not documented`);
      else if (raw.length > 0) {
        const media = documented.content?.[type];
        if (!media) problems.push(`${match.key} ${res.status}: media type ${type} is not documented`);
        else if (type.endsWith('json')) {
          const text = raw.toString('utf8');
          // Streaming produce: one JSON object a line, each a delivery report.
          const values = text.includes('\n{')
            ? text
                .trim()
                .split('\n')
                .map((l) => JSON.parse(l))
            : [JSON.parse(text)];
          for (const v of values)
            for (const e of validate(media.schema ?? {}, v)) problems.push(`${match.key} ${res.status}: ${e}`);
        }
      }
      return {
        status: res.status,
        body: type.endsWith('json') && raw.length > 0 ? JSON.parse(raw.toString('utf8').split('\n')[0]!) : raw,
      };
    };
    const B = '/v3/clusters/local';

    await call('GET', '/health');
    await call('GET', '/v3/clusters');
    await call('GET', B);
    await call('POST', `${B}/topics`, { topic_name: 'o', partitions_count: 2, replication_factor: 2 });
    await call('POST', `${B}/topics`, { topic_name: 'o2', validate_only: true });
    await call('GET', `${B}/topics`);
    await call('GET', `${B}/topics/o`);
    await call('PATCH', `${B}/topics/o`, { partitions_count: 3 });
    await call('GET', `${B}/topics/-/configs`);
    await call('GET', `${B}/topics/o/configs`);
    await call('POST', `${B}/topics/o/configs:alter`, { data: [{ name: 'retention.ms', value: '100000' }] });
    await call('GET', `${B}/topics/o/configs/retention.ms`);
    await call('PUT', `${B}/topics/o/configs/retention.ms`, { value: '200000' });
    await call('DELETE', `${B}/topics/o/configs/retention.ms`);
    await call('GET', `${B}/brokers`);
    await call('GET', `${B}/brokers/0`);
    await call('GET', `${B}/brokers/0/configs`);
    await call('GET', `${B}/brokers/0/configs/num.partitions`);
    await call('GET', `${B}/broker-configs`);
    await call('GET', `${B}/brokers/1/partition-replicas`);
    await call('GET', `${B}/topics/o/partitions`);
    await call('GET', `${B}/topics/o/partitions/0`);
    await call('GET', `${B}/topics/o/partitions/0/replicas`);
    await call('GET', `${B}/topics/o/partitions/0/replicas/1`);
    await call('GET', `${B}/topics/-/partitions/-/reassignment`);
    await call('GET', `${B}/topics/o/partitions/-/reassignment`);
    await call('GET', `${B}/topics/o/partitions/0/reassignment`);
    await call('POST', `${B}/topics/o/records`, {
      partition_id: 0,
      key: { type: 'STRING', data: 'k' },
      value: { type: 'JSON', data: { n: 1 } },
    });
    await call(
      'POST',
      `${B}/topics/o/records`,
      '{"partition_id":0,"value":{"data":1}}\n{"partition_id":0,"value":{"data":2}}' as unknown,
    );
    await call('POST', `${B}/topics/o/records:batch`, {
      entries: [{ id: '1', partition_id: 0, value: { type: 'STRING', data: 'a' } }],
    });
    const batch = encodeRecordBatch([{ key: null, value: Buffer.from('rb'), headers: [], timestamp: Date.now() }]);
    await call('POST', `${B}/topics/o/partitions/0/records`, batch, {
      'content-type': 'application/vnd.kafka.record-batch.v2',
    });
    await call('GET', `${B}/topics/o/partitions/0/records?offset=0&format=string`);
    await call('GET', `${B}/topics/o/partitions/0/records?offset=0`, undefined, {
      accept: 'application/vnd.kafka.record-batch.v2',
    });
    await call('GET', `${B}/topics/o/partitions/0/records?offset=999`);
    // Kafka's ProduceRequest and FetchRequest over many partitions (one unknown: a partition error in a 200).
    await call(
      'POST',
      `${B}/records`,
      encodeTopicData([
        {
          name: 'o',
          partitions: [
            { index: 0, records: batch },
            { index: 99, records: batch },
          ],
        },
      ]),
      { 'content-type': PRODUCE_REQUEST_MEDIA_TYPE },
    );
    await call('POST', `${B}/records`, new Uint8Array([0, 0, 0, 1]), { 'content-type': PRODUCE_REQUEST_MEDIA_TYPE });
    await call('POST', `${B}/records:fetch`, {
      topics: [
        {
          topic: 'o',
          partitions: [
            { partition: 0, fetch_offset: 0 },
            { partition: 99, fetch_offset: 0 },
          ],
        },
      ],
    });
    await call('POST', `${B}/records:fetch`, {
      format: 'string',
      topics: [{ topic: 'o', partitions: [{ partition: 0, fetch_offset: 0 }] }],
    });
    await call('POST', `${B}/records:fetch`, { topics: [] });
    await call('GET', `${B}/topics/o/partitions/0/offset`);
    await call('GET', `${B}/topics/o/partitions/0/offset?offset_type=latest`);
    await call('POST', `${B}/producers:init`, {});
    await call('POST', `${B}/topics/o/replicas:sync`);
    await call('POST', `${B}/topics/o/partitions/0/records:delete`, { before_offset: 1 });

    const hb = await call('POST', `${B}/consumer-groups/g/consumers:heartbeat`, { subscribed_topic_names: ['o'] });
    const member = { member_id: hb.body.member_id as string, member_epoch: hb.body.member_epoch as number };
    const hb2 = await call('POST', `${B}/consumer-groups/g/consumers:heartbeat`, {
      ...member,
      subscribed_topic_names: ['o'],
    });
    member.member_epoch = hb2.body.member_epoch;
    await call('GET', `${B}/consumer-groups`);
    await call('GET', `${B}/consumer-groups/g`);
    await call('GET', `${B}/consumer-groups/g/consumers`);
    await call('GET', `${B}/consumer-groups/g/consumers/${member.member_id}`);
    await call('GET', `${B}/consumer-groups/g/consumers/${member.member_id}/assignments`);
    await call('GET', `${B}/consumer-groups/g/consumers/${member.member_id}/assignments/o/partitions/0`);
    await call('POST', `${B}/consumer-groups/g/offsets:commit`, {
      ...member,
      offsets: [{ topic_name: 'o', partition_id: 0, offset: 2 }],
    });
    await call('GET', `${B}/consumer-groups/g/offsets`);
    await call('GET', `${B}/consumer-groups/g/offsets/o/partitions/0`);
    await call('GET', `${B}/consumer-groups/g/lags`);
    await call('GET', `${B}/consumer-groups/g/lags/o/partitions/0`);
    await call('GET', `${B}/consumer-groups/g/lag-summary`);
    await call('DELETE', `${B}/consumer-groups/g/consumers/${member.member_id}`);
    await call('POST', `${B}/consumer-groups/g/offsets:reset`, {
      all_topics: true,
      strategy: 'to-earliest',
      dry_run: true,
    });
    await call('DELETE', `${B}/consumer-groups/g`);

    await call(
      'POST',
      '/consumers/v2g',
      { name: 'c', format: 'binary', 'auto.offset.reset': 'earliest' },
      { 'content-type': 'application/vnd.kafka.v2+json' },
    );
    await call('POST', '/consumers/v2g/instances/c/subscription', { topics: ['o'] });
    await call('GET', '/consumers/v2g/instances/c/subscription');
    await call('GET', '/consumers/v2g/instances/c/assignments');
    await call('GET', '/consumers/v2g/instances/c/records?timeout=0');
    await call('POST', '/consumers/v2g/instances/c/offsets', { offsets: [{ topic: 'o', partition: 0, offset: 1 }] });
    await call('GET', '/consumers/v2g/instances/c/offsets?topic=o&partition=0');
    await call('POST', '/consumers/v2g/instances/c/positions', { offsets: [{ topic: 'o', partition: 0, offset: 0 }] });
    await call('POST', '/consumers/v2g/instances/c/positions/beginning', {
      partitions: [{ topic: 'o', partition: 0 }],
    });
    await call('POST', '/consumers/v2g/instances/c/positions/end', { partitions: [{ topic: 'o', partition: 0 }] });
    await call('DELETE', '/consumers/v2g/instances/c/subscription');
    await call('DELETE', '/consumers/v2g/instances/c');
    const init = await call('POST', `${B}/transactions/tx/init`, { transaction_timeout_ms: 60000 });
    const producer = {
      producer_id: init.body.producer_id as number,
      producer_epoch: init.body.producer_epoch as number,
    };
    await call('POST', `${B}/transactions/tx/partitions`, {
      ...producer,
      partitions: [{ topic_name: 'o', partition_id: 1 }],
    });
    await call('POST', `${B}/transactions/tx/offsets`, {
      ...producer,
      group_id: 'txg',
      offsets: [{ topic_name: 'o', partition_id: 1, offset: 0 }],
    });
    await call('GET', `${B}/transactions`);
    await call('GET', `${B}/transactions/tx`);
    await call('GET', `${B}/transactions:hanging`);
    await call('POST', `${B}/transactions/tx/commit`, producer);
    await call('POST', `${B}/transactions/tx/partitions`, {
      ...producer,
      partitions: [{ topic_name: 'o', partition_id: 1 }],
    });
    await call('POST', `${B}/transactions/tx/abort`, producer);
    await call('POST', `${B}/topics/o/partitions/1/transactions:abort`, producer);

    const acl = {
      resource_type: 'TOPIC',
      resource_name: 'o',
      pattern_type: 'LITERAL',
      principal: 'User:alice',
      host: '*',
      operation: 'READ',
      permission: 'ALLOW',
    };
    await call('POST', `${B}/acls`, acl);
    await call('POST', `${B}/acls:batch`, { data: [{ ...acl, operation: 'WRITE' }] });
    await call('GET', `${B}/acls?resource_type=TOPIC`);
    await call('DELETE', `${B}/acls?resource_type=TOPIC&principal=User:alice`);
    await call('POST', `${B}/client-quotas:alter`, {
      data: [
        {
          entity: [{ entity_type: 'user', entity_name: 'alice' }],
          ops: [{ key: 'producer_byte_rate', value: 1048576 }],
        },
      ],
    });
    await call('GET', `${B}/client-quotas?user=alice`);
    const salt = Buffer.alloc(16, 1).toString('base64');
    await call('POST', `${B}/user-scram-credentials:alter`, {
      upsertions: [
        { user: 'alice', mechanism: 'SCRAM-SHA-256', iterations: 4096, salt, salted_password: salt },
        { user: 'bob', mechanism: 'SCRAM-SHA-256', iterations: 10, salt, salted_password: salt },
      ],
    });
    await call('GET', `${B}/user-scram-credentials?user=alice&user=nobody`);

    await call('DELETE', `${B}/topics/o`);

    expect(problems).toEqual([]);
    expect(operations.map((o) => o.key).filter((k) => !reached.has(k))).toEqual([]);
  });
});
