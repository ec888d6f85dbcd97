/**
 * A scenario that calls every operation of the HTTP API once or more, in an order that makes each
 * call meaningful (a topic before its records, a member before its offsets, a transaction before
 * its commit). test/http/openapi-responses.test.ts checks that it reaches every operation of the
 * OpenAPI document and checks the answers; test/infra/data-access.test.ts runs it through the
 * functions API Gateway routes each call to, and checks every storage call against their roles.
 */
import { encodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE } from '../../src/wire/produce-request.js';
import { encodeRecordBatch } from '../../src/wire/record-batch.js';

export type ScenarioCall = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; body: any }>;

/** Runs the scenario on cluster `local` (a store count of 2 or more: topic `o` has replication factor 2). */
export async function everyOperation(call: ScenarioCall): Promise<void> {
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
  await call('PUT', `${B}/share-groups/sg/configs/share.auto.offset.reset`, { value: 'earliest' });
  await call('GET', `${B}/share-groups/sg/configs`);
  await call('POST', `${B}/share-groups/sg/configs:alter`, {
    data: [
      { name: 'share.delivery.count.limit', value: '4' },
      { name: 'share.isolation.level', operation: 'DELETE' },
    ],
  });
  const shared = await call('POST', `${B}/share-groups/sg/records:receive`, {
    topics: ['o'],
    member_id: 'w',
    max_records: 2,
  });
  const got = (shared.body?.data ?? []) as { topic_name: string; partition_id: number; offset: number }[];
  await call('POST', `${B}/share-groups/sg/records:acknowledge`, {
    member_id: 'w',
    acknowledgements: got.length
      ? got.map((r) => ({ topic_name: r.topic_name, partition_id: r.partition_id, offset: r.offset, type: 'accept' }))
      : [{ topic_name: 'o', partition_id: 0, offset: 0, type: 'accept' }],
  });
  await call('GET', `${B}/share-groups`);
  await call('GET', `${B}/groups?types=consumer,share`);
  await call('GET', `${B}/share-groups/sg`);
  await call('DELETE', `${B}/share-groups/sg/configs/share.auto.offset.reset`);
  await call('POST', `${B}/share-groups/sg/offsets:reset`, {
    strategy: 'to-earliest',
    all_topics: true,
    dry_run: true,
  });
  await call('POST', `${B}/share-groups/sg/offsets:reset`, {
    strategy: 'to-offset',
    offset: 0,
    topics: [{ topic_name: 'o' }],
  });
  await call('POST', `${B}/share-groups/sg/offsets:delete`, { topics: ['o'] });
  await call('DELETE', `${B}/share-groups/sg`);
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
  await call('POST', `${B}/triggers`, {
    trigger_name: 'hook',
    topic_name: 'o',
    target: { type: 'WEBHOOK', url: 'http://127.0.0.1:9/hook' },
  });
  await call('GET', `${B}/triggers`);
  await call('GET', `${B}/triggers/hook`);
  await call('POST', `${B}/triggers/hook/pause`);
  await call('POST', `${B}/triggers/hook/resume`);
  await call('DELETE', `${B}/triggers/hook`);

  await call('GET', `${B}/features`);
  await call('POST', `${B}/features:raise`, { feature_level: 1 });

  await call('DELETE', `${B}/topics/o`);
}
