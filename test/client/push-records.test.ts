/**
 * Records in push notifications, on the consumer's side: a real local server holds the log and
 * answers fetches, and the consumer's push connection goes to a WebSocket server this test plays,
 * sending `ready` messages as the notifier would, with faults: a post lost, one sent twice, one
 * with a high watermark that does not cover its records, one before the last stable offset. The
 * pushed records carry values of their own ("pushed-N") at the offsets the server holds ("log-N"),
 * so which path delivered each offset shows; every offset must be delivered once, in order.
 */
import { describe, expect, it } from 'vitest';
import { Kafka } from '../../src/client/index.js';
import { encodeRecordBatch } from '../../src/wire/record-batch.js';
import { localServerWithPushGateway } from '../support/push-gateway.js';
import { quiet, until } from '../support/until.js';

interface Fetches {
  /** Fetches of records begun. */
  n: number;
  /** Begun and not answered yet. */
  inFlight: number;
}

const countingFetch =
  (fetches: Fetches): typeof globalThis.fetch =>
  async (input, init) => {
    if (!String(input instanceof Request ? input.url : input).includes('/records'))
      return globalThis.fetch(input, init);
    fetches.n++;
    fetches.inFlight++;
    try {
      return await globalThis.fetch(input, init);
    } finally {
      fetches.inFlight--;
    }
  };

/**
 * Resolves once the consumer's fetches have stopped: none unanswered, none begun for 300 ms. A long
 * poll begun before the push connection opened stays unanswered up to fetch.max.wait.ms (500 ms),
 * and the fetch without a wait that follows the connection begins only after it: a count that
 * stood still while a fetch was in flight had not stopped (on a loaded machine that fetch came
 * after the test had taken its count, or the long poll answered records the test had just
 * produced for a push to tell of).
 */
async function fetchesStopped(fetches: Fetches): Promise<void> {
  do {
    await until('no fetch in flight', () => fetches.inFlight === 0);
    await quiet(fetches, 300);
  } while (fetches.inFlight > 0);
}

/** A commit's message as the notifier sends it to a consumer that takes records. */
function pushed(
  first: number,
  last: number,
  highWatermark = last + 1,
  lastStableOffset = highWatermark,
  topic = 'faults',
) {
  const values = Array.from({ length: last - first + 1 }, (_, i) => `pushed-${first + i}`);
  const batch = encodeRecordBatch(
    values.map((v) => ({ key: null, value: Buffer.from(v), headers: [], timestamp: Date.now() })),
    { baseOffset: first },
  );
  return JSON.stringify({
    type: 'ready',
    topic,
    partitions: [
      {
        partition: 0,
        high_watermark: highWatermark,
        last_stable_offset: lastStableOffset,
        base_offset: first,
        last_offset: last,
        records: Buffer.from(batch).toString('base64'),
      },
    ],
  });
}

describe('records in push notifications, with lost, duplicate and stale posts', () => {
  const h = localServerWithPushGateway('client-push-records-', [
    { topic: 'faults', numPartitions: 1 },
    { topic: 'stable', numPartitions: 1 },
  ]);
  /** What the consumers sent the gateway (their subscribes), in order. */
  const subscribes = () => h.connections.flatMap((c) => c.messages);
  /** The socket the notifier posts on: the last connection's. */
  const socket = () => h.connections.at(-1)!.ws;

  it('takes records that start at its position without a fetch, and fetches past every fault', async () => {
    const producer = new Kafka({ url: h.server.origin }).producer();
    const produce = async (first: number, last: number) => {
      for (let o = first; o <= last; o++) await producer.send({ topic: 'faults', messages: [{ value: `log-${o}` }] });
    };
    await produce(0, 4);
    const fetches = { n: 0, inFlight: 0 };
    const consumer = h.consumer({ autoOffsetReset: 'earliest' }, { fetch: countingFetch(fetches) });
    consumer.assign([{ topic: 'faults', partition: 0 }]);
    const seen: { offset: number; value: string }[] = [];
    let stop = false;
    const polling = (async () => {
      while (!stop) {
        for (const r of await consumer.poll({ timeoutMs: 50 }))
          seen.push({ offset: r.offset, value: r.value!.toString() });
      }
    })();
    const settled = async (n: number) => {
      await until(`${n} records`, () => seen.length >= n);
      await new Promise((r) => setTimeout(r, 300)); // nothing more comes
    };
    try {
      // Caught up on the log (its answer reached the high watermark): armed where it ends, asking for records.
      await settled(5);
      await until('the arm', () => subscribes().length > 0);
      expect(subscribes()[0]).toEqual({
        action: 'subscribe',
        topic: 'faults',
        partitions: [{ partition: 0, offset: 5 }],
        records: true,
      });

      // The connection's opening fetches once more (without a wait); then it waits on the socket.
      await fetchesStopped(fetches);

      // Records at its position: taken from the message, no fetch.
      await produce(5, 7);
      const before = fetches.n;
      socket().send(pushed(5, 7));
      await settled(8);
      expect(fetches.n).toBe(before);
      // The same post again: nothing delivered twice, no fetch.
      socket().send(pushed(5, 7));
      await new Promise((r) => setTimeout(r, 300));
      expect(seen).toHaveLength(8);
      expect(fetches.n).toBe(before);

      // The post of 8..9 lost: 10..11 is past its position, so it fetches 8..11 from the log.
      await produce(8, 11);
      socket().send(pushed(10, 11));
      await settled(12);
      expect(fetches.n).toBeGreaterThan(before);

      // A high watermark that does not cover the records (stale): not taken, fetched.
      await produce(12, 13);
      socket().send(pushed(12, 13, 13));
      await settled(14);

      // The records above the last stable offset (an open transaction before them): read_uncommitted
      // takes them anyway, as Kafka's read_uncommitted does.
      await produce(14, 15);
      socket().send(pushed(14, 15, 16, 14));
      await settled(16);
    } finally {
      stop = true;
      await polling;
      await producer.close();
    }
    // No subscribe after the first: the arm stays on the server and moves on with the consumer.
    expect(subscribes()).toHaveLength(1);
    expect(seen.map((r) => r.offset)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    const path = (from: number, to: number) => seen.slice(from, to + 1).map((r) => r.value.split('-')[0]);
    expect(path(0, 4)).toEqual(Array(5).fill('log'));
    expect(path(5, 7)).toEqual(Array(3).fill('pushed'));
    expect(path(8, 13)).toEqual(Array(6).fill('log'));
    expect(path(14, 15)).toEqual(Array(2).fill('pushed'));
    await consumer.close();
  }, 60_000);

  it('read_committed does not take records at or above the last stable offset: it fetches them once told they are stable', async () => {
    const producer = new Kafka({ url: h.server.origin }).producer();
    const fetches = { n: 0, inFlight: 0 };
    const consumer = h.consumer(
      { isolationLevel: 'read_committed', autoOffsetReset: 'earliest' },
      { fetch: countingFetch(fetches) },
    );
    consumer.assign([{ topic: 'stable', partition: 0 }]);
    const seen: string[] = [];
    let stop = false;
    const polling = (async () => {
      while (!stop) for (const r of await consumer.poll({ timeoutMs: 50 })) seen.push(r.value!.toString());
    })();
    const produce = async (...values: string[]) => {
      for (const value of values) await producer.send({ topic: 'stable', messages: [{ value }] });
    };
    try {
      await produce('log-0', 'log-1');
      await until('the arm', () => subscribes().some((m) => m.topic === 'stable') && seen.length === 2);
      await fetchesStopped(fetches);
      await produce('log-2', 'log-3');
      // Told while a transaction before them is open: not readable yet, neither taken nor fetched.
      socket().send(pushed(2, 3, 4, 2, 'stable'));
      await new Promise((r) => setTimeout(r, 500));
      expect(seen).toEqual(['log-0', 'log-1']);
      // Then the stable offset moves (told without records): fetched from the log.
      socket().send(
        JSON.stringify({
          type: 'ready',
          topic: 'stable',
          partitions: [{ partition: 0, high_watermark: 4, armed: true }],
        }),
      );
      await until('2..3', () => seen.length >= 4);
    } finally {
      stop = true;
      await polling;
      await producer.close();
    }
    expect(seen).toEqual(['log-0', 'log-1', 'log-2', 'log-3']);
  }, 60_000);
});
