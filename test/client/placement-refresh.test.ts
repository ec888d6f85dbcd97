/**
 * The producer's placements (which partitions' batches share a request: those written to the same
 * stores) follow a leader the server elected inside a request. The leader's store failing is no
 * error to the producer: the server elects a new leader, appends there and answers OK, with the
 * partition's leader, epoch and ISR as of the append (KIP-951's current leader). The producer takes
 * them at once, rather than grouping by the old leader until metadata.max.age.ms (5 minutes).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Kafka } from '../../src/client/index.js';
import { createStorage, type Storage } from '../../src/compose.js';
import { decodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE } from '../../src/wire/produce-request.js';
import { FaultyObjectStore } from '../support/fault-injection.js';
import { BASE, testApp } from '../support/test-app.js';
import { until } from '../support/until.js';

describe('placements learnt from produce answers', () => {
  let stores: FaultyObjectStore[];
  let app: ReturnType<typeof testApp>;
  /** The partitions each multi-partition produce request named, in order. */
  let produces: number[][];
  let partitionReads: number;
  let kafka: Kafka;

  beforeEach(() => {
    const inner = createStorage({ kind: 'memory', replicaStores: 3 });
    stores = inner.stores.map((s) => new FaultyObjectStore(s));
    const storage: Storage = { metadata: inner.metadata, stores, close: () => {} };
    app = testApp({ storage });
    produces = [];
    partitionReads = 0;
    kafka = new Kafka({
      url: `http://test.local${BASE}`,
      pushUrl: false,
      fetch: async (input, init) => {
        const url = String(input);
        const res = await app.app.request(url, init);
        const type = new Headers(init?.headers).get('content-type');
        if (init?.method === 'POST' && type === PRODUCE_REQUEST_MEDIA_TYPE) {
          const body = new Uint8Array(await new Request(url, init).arrayBuffer());
          produces.push(decodeTopicData(body).flatMap((t) => t.partitions.map((p) => p.index)));
        }
        if (init?.method === 'GET' && /\/partitions(\?|$)/.test(url)) partitionReads++;
        return res;
      },
    });
  });
  afterEach(() => app.services.log.idle());

  it("groups by a leader elected inside a request from that request's answer, without reading the placements again", async () => {
    // RF 2 over three stores: partition i on stores i and i+1, led by store i.
    await kafka.admin().createTopics({ topics: [{ topic: 'moved', numPartitions: 3, replicationFactor: 2 }] });
    const producer = kafka.producer({ acks: 1, lingerMs: 100 });
    await producer.connect();
    await producer.send({ topic: 'moved', messages: [{ value: 'warm', partition: 2 }] });
    await until('the placements read', () => partitionReads === 1);
    const both = () =>
      Promise.all(
        [0, 1].map((partition) =>
          producer.send({ topic: 'moved', messages: [{ value: `to-${partition}`, partition }] }),
        ),
      );
    // Led by stores 0 and 1: a request each.
    produces = [];
    await both();
    expect(produces.map((ps) => ps.sort())).toEqual(expect.arrayContaining([[0], [1]]));
    expect(produces).toHaveLength(2);

    // Store 0 fails: partition 0's next append elects store 1 and is answered without an error.
    stores[0]!.faults.down = true;
    const [moved] = await producer.send({ topic: 'moved', messages: [{ value: 'elects', partition: 0 }] });
    expect(moved).toMatchObject({ partition: 0 });
    const described = (await app.call('GET', 'topics/moved/partitions/0')).body;
    expect(described).toMatchObject({ leader_id: 1, leader_epoch: 1 });

    // Both partitions are led by store 1 now: one request, with no read of the placements.
    produces = [];
    await both();
    expect(produces).toEqual([[0, 1]]);
    expect(partitionReads).toBe(1);
    await producer.close();
  });
});
