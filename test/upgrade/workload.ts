/**
 * What a fixture holds, written through the public APIs only (HTTP v3 and the Kafka protocol via
 * kafkajs), so the same workload runs against any release: topics with configs (one compacted),
 * plain, keyed and headered records in several partitions, an HTTP idempotent producer with its
 * sequences, kafkajs idempotent and transactional producers (one transaction committed with group
 * offsets, one aborted, one left open), a consumer group's commits, deleted records, ACLs and quotas.
 */
import { Kafka, logLevel, type Producer } from 'kafkajs';
import type { Api } from './snapshot.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

/** What the workload knows the cluster must still hold: the HTTP idempotent producer's last batch per partition. */
export interface WorkloadFacts {
  idempotent: {
    producerId: number;
    producerEpoch: number;
    /** Per partition of `orders`: the next sequence it would send and the offset its last batch got. */
    partitions: { partition: number; nextSequence: number; lastOffset: number; lastBatch: unknown }[];
  };
  /** The transactional id left with a transaction open when the fixture was taken. */
  openTransactionalId: string;
  /** Groups to read besides the listed ones: one holds only offsets a transaction committed. */
  groups: string[];
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

export async function writeWorkload(
  api: Api,
  kafkaBroker: string,
): Promise<{ facts: WorkloadFacts; close(): Promise<void> }> {
  await api.post('/topics', {
    topic_name: 'orders',
    partitions_count: 3,
    configs: [
      { name: 'retention.ms', value: '-1' },
      { name: 'max.message.bytes', value: '500000' },
    ],
  });
  await api.post('/topics', {
    topic_name: 'compacted',
    partitions_count: 1,
    configs: [
      { name: 'cleanup.policy', value: 'compact' },
      { name: 'min.cleanable.dirty.ratio', value: '0.01' },
    ],
  });
  await api.post('/topics', {
    topic_name: 'events',
    partitions_count: 1,
    configs: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }],
  });
  await api.post('/topics', { topic_name: 'tx-out', partitions_count: 2 });

  const start = Date.now();
  // Plain records, one request each: many request objects, so maintenance has runs to merge.
  for (let i = 0; i < 24; i++) {
    await api.post('/topics/orders/records', {
      partition_id: i % 3,
      key: { type: 'STRING', data: `order-${i}` },
      value: { type: 'JSON', data: { n: i, item: `thing ${i}` } },
      headers: [{ name: 'source', value: b64('fixture') }],
      timestamp: new Date(start - (24 - i) * 1000).toISOString(),
    });
  }
  // Several records in one request (group commit or one object for many partitions).
  await api.post('/topics/orders/records:batch', {
    entries: [0, 1, 2, 3].map((i) => ({
      id: i,
      partition_id: i % 3,
      key: null,
      value: { type: 'BINARY', data: b64(`binary-${i}`) },
    })),
  });

  // An idempotent producer over HTTP, with explicit sequences.
  const pid = await api.post<{ producer_id: number; producer_epoch: number }>('/producers:init');
  const sequences = new Map<number, number>();
  const lastOffsets = new Map<number, number>();
  const lastBatches = new Map<number, unknown>();
  for (let round = 0; round < 3; round++) {
    for (const partition of [0, 1]) {
      const next = sequences.get(partition) ?? 0;
      const batch = {
        producer_id: pid.producer_id,
        producer_epoch: pid.producer_epoch,
        sequences: [{ partition_id: partition, base_sequence: next }],
        entries: [0, 1].map((k) => ({
          id: k,
          partition_id: partition,
          key: { type: 'STRING', data: `idem-${round}-${k}` },
          value: { type: 'STRING', data: `idempotent ${round}.${k}` },
        })),
      };
      const answer = await api.post<{ successes: { offset: number }[]; failures: unknown[] }>(
        '/topics/orders/records:batch',
        batch,
      );
      if (answer.failures.length > 0) throw new Error(`idempotent batch failed: ${JSON.stringify(answer.failures)}`);
      sequences.set(partition, next + 2);
      lastOffsets.set(partition, answer.successes.at(-1)!.offset);
      lastBatches.set(partition, batch);
    }
  }

  // A compacted topic: keys written over and over, one deleted (a tombstone).
  for (let i = 0; i < 20; i++) {
    await api.post('/topics/compacted/records', {
      key: { type: 'STRING', data: `key-${i % 4}` },
      value: i === 17 ? null : { type: 'STRING', data: `version ${i}` },
    });
  }

  for (let i = 0; i < 6; i++)
    await api.post('/topics/events/records', { value: { type: 'STRING', data: `event ${i}` } });
  await api.post('/topics/events/partitions/0/records:delete', { before_offset: 2 });

  const kafka = new Kafka({
    brokers: [kafkaBroker],
    clientId: 'fixture-writer',
    logLevel: logLevel.NOTHING,
    retry: { retries: 5 },
  });
  const idempotent = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await idempotent.connect();
  for (let i = 0; i < 3; i++)
    await idempotent.send({ topic: 'events', messages: [{ key: `k${i}`, value: `kafkajs idempotent ${i}` }] });
  await idempotent.disconnect();

  // A consumer group reads `orders` and commits where it stopped.
  const consumer = kafka.consumer({
    groupId: 'fixture-group',
    sessionTimeout: 6000,
    heartbeatInterval: 300,
    maxWaitTimeInMs: 100,
  });
  await consumer.connect();
  await consumer.subscribe({ topic: 'orders', fromBeginning: true });
  let seen = 0;
  await consumer.run({ autoCommitInterval: 100, eachMessage: async () => void seen++ });
  const until = Date.now() + 30_000;
  while (seen < 40 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  await consumer.disconnect();
  if (seen < 40) throw new Error(`the fixture group read ${seen} records of orders, not 40`);
  // Offsets with metadata, over HTTP.
  await api.post('/consumer-groups/http-group/offsets:commit', {
    offsets: [
      { topic_name: 'events', partition_id: 0, offset: 4, metadata: 'http commit' },
      { topic_name: 'orders', partition_id: 2, offset: 5 },
    ],
  });

  const transactional = async (id: string): Promise<Producer> => {
    const p = kafka.producer({
      transactionalId: id,
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 600_000,
    });
    await p.connect();
    return p;
  };
  const committed = await transactional('fixture-tx-committed');
  const t1 = await committed.transaction();
  await t1.send({
    topic: 'tx-out',
    messages: [
      { partition: 0, value: 'committed a' },
      { partition: 1, value: 'committed b' },
    ],
  });
  await t1.sendOffsets({
    consumerGroupId: 'fixture-tx-group',
    topics: [{ topic: 'orders', partitions: [{ partition: 0, offset: '3' }] }],
  });
  await t1.commit();
  await committed.disconnect();

  const aborted = await transactional('fixture-tx-aborted');
  const t2 = await aborted.transaction();
  await t2.send({
    topic: 'tx-out',
    messages: [
      { partition: 0, value: 'aborted a' },
      { partition: 1, value: 'aborted b' },
    ],
  });
  await t2.abort();
  await aborted.disconnect();

  // Left open: the fixture is taken with this transaction ongoing (its producer never ends it).
  const open = await transactional('fixture-tx-open');
  const t3 = await open.transaction();
  await t3.send({ topic: 'tx-out', messages: [{ partition: 0, value: 'open a' }] });

  await api.post('/acls:batch', {
    data: [
      {
        resource_type: 'TOPIC',
        resource_name: 'orders',
        pattern_type: 'LITERAL',
        principal: 'User:alice',
        host: '*',
        operation: 'READ',
        permission: 'ALLOW',
      },
      {
        resource_type: 'TOPIC',
        resource_name: 'tx-',
        pattern_type: 'PREFIXED',
        principal: 'User:bob',
        host: '*',
        operation: 'WRITE',
        permission: 'ALLOW',
      },
      {
        resource_type: 'GROUP',
        resource_name: '*',
        pattern_type: 'LITERAL',
        principal: 'User:mallory',
        host: '10.0.0.1',
        operation: 'ALL',
        permission: 'DENY',
      },
      {
        resource_type: 'CLUSTER',
        resource_name: 'kafka-cluster',
        pattern_type: 'LITERAL',
        principal: 'User:admin',
        host: '*',
        operation: 'ALTER',
        permission: 'ALLOW',
      },
    ],
  });
  await api.post('/client-quotas:alter', {
    data: [
      { entity: [{ entity_type: 'user', entity_name: 'alice' }], ops: [{ key: 'producer_byte_rate', value: 1048576 }] },
      {
        entity: [{ entity_type: 'client-id', entity_name: null }],
        ops: [{ key: 'consumer_byte_rate', value: 2097152 }],
      },
    ],
  });

  return {
    facts: {
      idempotent: {
        producerId: pid.producer_id,
        producerEpoch: pid.producer_epoch,
        partitions: [0, 1].map((partition) => ({
          partition,
          nextSequence: sequences.get(partition)!,
          lastOffset: lastOffsets.get(partition)!,
          lastBatch: lastBatches.get(partition),
        })),
      },
      openTransactionalId: 'fixture-tx-open',
      groups: ['fixture-tx-group'],
    },
    close: () => open.disconnect(),
  };
}
