/**
 * Committed offsets -1 and -2, as kafkajs commits them after a reset (`setDefaultOffset`) and for
 * `admin.resetOffsets`: stored as they come, as Kafka's coordinator stores them, and read back as
 * "no position". A fetch past the log end answers OFFSET_OUT_OF_RANGE at once, whatever its wait.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { ERRORS } from '../../src/wire/errors.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { decodeResponse, fetchPartition, fetchRequest, RawClient } from './support/raw-client.js';
import { until } from '../support/until.js';

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

let s: TestKafkaServer;
let kafka: Kafka;
beforeAll(async () => {
  s = await startKafkaServer();
  kafka = new Kafka({
    brokers: [s.broker],
    clientId: 'kafkajs-offsets',
    logLevel: logLevel.NOTHING,
    retry: { retries: 8, initialRetryTime: 50 },
  });
});
afterAll(async () => {
  await s?.close();
});

const fast = { sessionTimeout: 6000, heartbeatInterval: 300, rebalanceTimeout: 10_000, maxWaitTimeInMs: 200 };

async function http(method: string, path: string, body?: unknown) {
  const res = await fetch(`${s.http}/${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function topicWithRecords(topic: string, count: number) {
  await s.services.topics.create({ name: topic, partitionCount: 1, replicationFactor: 1 });
  const posted = await http('POST', `topics/${topic}/records:batch`, {
    entries: Array.from({ length: count }, (_, i) => ({
      id: String(i),
      partition_id: 0,
      value: { type: 'STRING', data: `v${i}` },
    })),
  });
  expect(posted.status).toBe(207);
}

/** Reads `count` records with a fresh consumer of `groupId`, committing as it goes; `afterFetch` runs after each fetch. */
async function consume(
  groupId: string,
  topic: string,
  count: number,
  fromBeginning = true,
  afterFetch?: () => Promise<unknown>,
): Promise<string[]> {
  const got: string[] = [];
  const c = kafka.consumer({ groupId, ...fast });
  let crashed: unknown;
  c.on(c.events.CRASH, (e) => {
    crashed = e.payload.error;
  });
  // A fetch ends after the positions were resolved: records produced from then on are read.
  if (afterFetch) c.on(c.events.FETCH, () => void afterFetch().catch((e: unknown) => (crashed = e)));
  await c.connect();
  await c.subscribe({ topic, fromBeginning });
  await c.run({ autoCommitThreshold: 1, eachMessage: async ({ message }) => void got.push(message.value!.toString()) });
  try {
    await until(`${count} records of ${topic}`, () => crashed !== undefined || got.length >= count, 20_000);
    expect(crashed).toBeUndefined();
  } finally {
    await c.disconnect();
  }
  return got;
}

const fetchOffsetsOf = async (groupId: string, topic: string) => {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [t] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return t!.partitions.map((p) => p.offset);
  } finally {
    await admin.disconnect();
  }
};

describe('committed offsets -1 and -2', () => {
  it('a consumer whose committed offset is past the log end resets (commits -2) and reads from the start', async () => {
    await topicWithRecords('past-end', 5);
    // Committed over HTTP by an admin: offset 50 of a log that ends at 5.
    const committed = await http('POST', 'consumer-groups/past-end-group/offsets:commit', {
      offsets: [{ topic_name: 'past-end', partition_id: 0, offset: 50 }],
    });
    expect(committed.status).toBe(200);
    // kafkajs answers the OFFSET_OUT_OF_RANGE by committing -2 (fromBeginning), then reads from 0.
    expect(await consume('past-end-group', 'past-end', 5)).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
    expect(await fetchOffsetsOf('past-end-group', 'past-end')).toEqual(['5']);
  }, 60_000);

  it('admin.resetOffsets stores -2 (earliest) and -1 (latest) and the next consumer starts there', async () => {
    await topicWithRecords('reset', 4);
    expect(await consume('reset-group', 'reset', 4)).toEqual(['v0', 'v1', 'v2', 'v3']);
    expect(await fetchOffsetsOf('reset-group', 'reset')).toEqual(['4']);

    const admin = kafka.admin();
    await admin.connect();
    try {
      await admin.resetOffsets({ groupId: 'reset-group', topic: 'reset', earliest: true });
      expect(await fetchOffsetsOf('reset-group', 'reset')).toEqual(['-2']);
      // Over HTTP: stored as committed; no lag for a partition without a position; a consumer
      // asking with auto.offset.reset starts where the reset says.
      const offsets = await http('GET', 'consumer-groups/reset-group/offsets?topic_name=reset');
      expect(offsets.body.data).toEqual([expect.objectContaining({ partition_id: 0, committed_offset: -2 })]);
      const position = await http('GET', 'consumer-groups/reset-group/offsets?topic_name=reset&auto_offset_reset=none');
      expect(position.status).toBe(416);
      expect(position.body.error).toBe('NO_OFFSET_FOR_PARTITION');
      expect(await consume('reset-group', 'reset', 4)).toEqual(['v0', 'v1', 'v2', 'v3']);

      await admin.resetOffsets({ groupId: 'reset-group', topic: 'reset', earliest: false });
      expect(await fetchOffsetsOf('reset-group', 'reset')).toEqual(['-1']);
      let produced = false;
      const after = async () => {
        if (produced) return;
        produced = true;
        await http('POST', 'topics/reset/records', { value: { type: 'STRING', data: 'after' } });
      };
      expect(await consume('reset-group', 'reset', 1, false, after)).toEqual(['after']);
    } finally {
      await admin.disconnect();
    }
  }, 90_000);
});

describe('a fetch past the log end', () => {
  const maxWaitMs = 20_000;

  it('is answered OFFSET_OUT_OF_RANGE at once over the listener, whatever its max wait', async () => {
    await topicWithRecords('out-of-range', 3);
    const c = await RawClient.open(s.broker);
    try {
      const started = Date.now();
      c.write(
        c.frame(
          m.Fetch,
          11,
          fetchRequest([{ topic: 'out-of-range', partitions: [fetchPartition(0, 10)] }], { maxWaitMs, minBytes: 1 }),
        ),
      );
      const frame = await c.readFrame(maxWaitMs + 5000);
      const elapsed = Date.now() - started;
      const answer = decodeResponse(m.Fetch, 11, frame!).body;
      expect(answer.responses[0].partitions[0].errorCode).toBe(ERRORS.OFFSET_OUT_OF_RANGE.code);
      expect(elapsed).toBeLessThan(maxWaitMs / 2);
    } finally {
      c.close();
    }
  }, 40_000);

  it('is answered OFFSET_OUT_OF_RANGE at once over HTTP, on both fetch routes', async () => {
    await topicWithRecords('out-of-range-http', 3);
    let started = Date.now();
    const one = await fetch(
      `${s.http}/topics/out-of-range-http/partitions/0/records?offset=10&min_bytes=1&max_wait_ms=${maxWaitMs}`,
    );
    expect(one.status).toBe(416);
    expect(Date.now() - started).toBeLessThan(maxWaitMs / 2);

    started = Date.now();
    const many = await http('POST', 'records:fetch', {
      max_wait_ms: maxWaitMs,
      min_bytes: 1,
      format: 'json',
      topics: [{ topic: 'out-of-range-http', partitions: [{ partition: 0, fetch_offset: 10 }] }],
    });
    expect(Date.now() - started).toBeLessThan(maxWaitMs / 2);
    expect(JSON.stringify(many.body)).toContain('OFFSET_OUT_OF_RANGE');
  }, 40_000);
});
