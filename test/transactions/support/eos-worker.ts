/**
 * A consume-transform-produce loop (the exactly-once pipeline of the test beside it): reads `in`
 * read_committed, writes `out-{value}` to `out` and the consumed offsets to the group in one
 * transaction per poll. It runs until it is killed; one line per committed transaction on stdout,
 * saying what it read and wrote under which producer epoch (the test quotes them when it fails).
 *
 *   node --import tsx eos-worker.ts <server origin> <transactional id> <group>
 */
import { Kafka } from '../../../src/client/index.js';

const [url, transactionalId, group] = process.argv.slice(2) as [string, string, string];
const kafka = new Kafka({ url });
const producer = kafka.producer({
  transactionalId,
  transactionTimeoutMs: 10_000,
  lingerMs: 0,
  retryBackoffMs: 50,
  retryBackoffMaxMs: 300,
});
const consumer = kafka.consumer({
  groupId: group,
  isolationLevel: 'read_committed',
  enableAutoCommit: false,
  autoOffsetReset: 'earliest',
  maxPollRecords: 10,
  retryBackoffMs: 50,
  retryBackoffMaxMs: 300,
  fetchMaxWaitMs: 100,
});

// The first transaction() is Kafka's initTransactions: the previous incarnation's open transaction
// is aborted before this one reads the group's committed offsets.
let txn = await producer.transaction();
consumer.assign([{ topic: 'in', partition: 0 }]);
for (;;) {
  const records = await consumer.poll({ timeoutMs: 200 });
  if (records.length === 0) continue;
  const sent = await txn.send({
    topic: 'out',
    messages: records.map((r) => ({ partition: 0, key: r.key, value: `out-${r.value!.toString()}` })),
  });
  // Widen the window in which a kill lands with the transaction open.
  await new Promise((r) => setTimeout(r, 20 + Math.random() * 40));
  await txn.sendOffsets({
    consumerGroupId: group,
    topics: [{ topic: 'in', partitions: [{ partition: 0, offset: records.at(-1)!.offset + 1 }] }],
  });
  await txn.commit();
  const id = producer.producerIdentity;
  const line = {
    committed: records.at(-1)!.offset + 1,
    in: [records[0]!.offset, records.at(-1)!.offset],
    out: [sent[0]?.offset, sent.at(-1)?.offset],
    producer: id && `${id.producerId}/${id.producerEpoch}`,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  txn = await producer.transaction();
}
