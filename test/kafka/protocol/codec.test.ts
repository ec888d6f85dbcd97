/**
 * The message definitions and the one codec: every message of every version round-trips, and the
 * definitions agree with kafkajs's own encoders and decoders (an independent implementation of
 * Kafka's protocol) for every version both speak: kafkajs's request bytes decode and re-encode to
 * the same bytes, and our response bytes decode in kafkajs to the values we wrote.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  decodeMessage,
  defaultOf,
  encodeMessage,
  isFlexible,
  ProtocolError,
  Reader,
  Writer,
} from '../../../src/kafka/protocol/codec.js';
import { HANDLERS } from '../../../src/kafka/dispatch.js';
import { APIS, API_BY_KEY } from '../../../src/kafka/protocol/messages/index.js';
import {
  inVersions,
  parseVersions,
  type Field,
  type FieldType,
  type MessageSpec,
} from '../../../src/kafka/protocol/schema.js';

const require = createRequire(import.meta.url);

/** A value for every field of a version (fields outside it get their defaults, as decode gives them). */
function sample(fields: Field[], version: number, seed: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  fields.forEach((f, i) => {
    if (!inVersions(f.versions, version)) out[f.name] = defaultOf(f, version);
    else if (inVersions(f.nullableVersions, version) && (seed + i) % 3 === 0) out[f.name] = null;
    else out[f.name] = sampleOf(f.type, version, seed + i);
  });
  return out;
}

function sampleOf(type: FieldType, version: number, seed: number): unknown {
  if (typeof type === 'object') {
    if ('struct' in type) return sample(type.struct, version, seed);
    return [0, 1].map((k) =>
      typeof type.array === 'string' ? sampleOf(type.array, version, seed + k) : sample(type.array, version, seed + k),
    );
  }
  switch (type) {
    case 'int8':
      return (seed % 100) - 50;
    case 'int16':
      return 300 + seed;
    case 'uint16':
      return 65_000 - seed;
    case 'int32':
      return 70_000 * (seed + 1);
    case 'int64':
      return 2 ** 40 + seed;
    case 'float64':
      return seed + 0.5;
    case 'bool':
      return seed % 2 === 0;
    case 'string':
      return `name-${seed}-é`;
    case 'uuid':
      return Buffer.alloc(16, seed);
    case 'bytes':
    case 'records':
      return Buffer.from(`bytes-${seed}`.repeat(seed % 4));
  }
}

function roundTrip(spec: MessageSpec, version: number, value: Record<string, unknown>) {
  const w = new Writer();
  encodeMessage(spec, version, value, w);
  const bytes = w.toBuffer();
  const r = new Reader(bytes);
  const back = decodeMessage(spec, version, r);
  expect(r.remaining).toBe(0);
  return { bytes, back };
}

describe('every message of every version round-trips', () => {
  for (const api of APIS) {
    for (const spec of [api.request, api.response]) {
      const { min, max } = parseVersions(spec.validVersions);
      it(`${spec.name} v${min}-v${max}`, () => {
        for (let v = min; v <= max; v++) {
          for (const seed of [0, 1, 2]) {
            const value = sample(spec.fields, v, seed);
            expect(roundTrip(spec, v, value).back).toEqual(value);
          }
        }
      });
    }
  }

  it('ApiVersions tells the truth: every API it lists has a handler, and nothing else does', () => {
    expect([...HANDLERS.keys()].sort((a, b) => a - b)).toEqual(APIS.map((a) => a.apiKey).sort((a, b) => a - b));
  });

  it('request and response of an API cover the same versions', () => {
    for (const api of APIS) expect(api.response.validVersions, api.name).toBe(api.request.validVersions);
  });
});

describe('the flexible encoding', () => {
  const spec = API_BY_KEY.get(18)!.response; // ApiVersions: tagged fields in v3
  it('writes compact arrays, tagged fields only when set, and skips unknown tags', () => {
    const base = { errorCode: 0, apiKeys: [{ apiKey: 1, minVersion: 0, maxVersion: 12 }], throttleTimeMs: 0 };
    const plain = roundTrip(spec, 3, base).bytes;
    // error code, compact array (2 = one element), element + its empty tag section, throttle, empty tags
    expect([...plain]).toEqual([0, 0, 2, 0, 1, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0]);
    const tagged = roundTrip(spec, 3, { ...base, finalizedFeaturesEpoch: 7 });
    expect(tagged.back.finalizedFeaturesEpoch).toBe(7);
    expect(tagged.bytes.byteLength).toBe(plain.byteLength + 10); // tag, size, int64
    // An unknown tag (99) is skipped.
    const withUnknown = Buffer.concat([plain.subarray(0, plain.byteLength - 1), Buffer.from([1, 99, 2, 0xab, 0xcd])]);
    expect(decodeMessage(spec, 3, new Reader(withUnknown)).apiKeys).toEqual(base.apiKeys);
  });

  it('rejects truncated bytes and impossible lengths with a ProtocolError', () => {
    const bytes = roundTrip(spec, 3, {
      errorCode: 0,
      apiKeys: [{ apiKey: 1, minVersion: 0, maxVersion: 12 }],
      throttleTimeMs: 0,
    }).bytes;
    for (let n = 0; n < bytes.byteLength; n++)
      expect(() => decodeMessage(spec, 3, new Reader(bytes.subarray(0, n)))).toThrow(ProtocolError);
    // A non-flexible array claiming 2^31-1 elements in 4 bytes.
    expect(() => decodeMessage(spec, 0, new Reader(Buffer.from([0, 0, 0x7f, 0xff, 0xff, 0xff])))).toThrow(/claims/);
    expect(isFlexible(spec, 2)).toBe(false);
  });
});

// kafkajs's request modules: protocol({ version })(args) -> { request: { encode }, response: { decode } }.
const kafkajs = (name: string) =>
  require(`kafkajs/src/protocol/requests/${name}/index.js`) as {
    versions: string[];
    protocol: (o: { version: number }) => (args?: unknown) => {
      request: { apiKey: number; encode: () => Promise<{ buffer: Buffer }> };
      response: { decode: (b: Buffer) => Promise<Record<string, unknown>> };
    };
  };

/** kafkajs arguments per API (its own names), for the requests. */
const REQUEST_ARGS: Record<string, unknown> = {
  apiVersions: undefined,
  metadata: { topics: ['a', 'b'], allowAutoTopicCreation: false },
  produce: {
    acks: -1,
    timeout: 3000,
    topicData: [
      { topic: 'a', partitions: [{ partition: 1, messages: [{ key: 'k', value: 'v', timestamp: '1700000000000' }] }] },
    ],
    transactionalId: null,
    producerId: 5,
    producerEpoch: 1,
  },
  fetch: {
    replicaId: -1,
    maxWaitTime: 500,
    minBytes: 1,
    maxBytes: 1048576,
    isolationLevel: 1,
    sessionId: 0,
    sessionEpoch: -1,
    rackId: 'r',
    topics: [
      {
        topic: 'a',
        partitions: [{ partition: 2, fetchOffset: '42', maxBytes: 65536, currentLeaderEpoch: 3, logStartOffset: '0' }],
      },
    ],
    forgottenTopics: [],
  },
  listOffsets: {
    replicaId: -1,
    isolationLevel: 1,
    topics: [{ topic: 'a', partitions: [{ partition: 0, timestamp: -2 }] }],
  },
  findCoordinator: { groupId: 'g', coordinatorType: 0 },
  joinGroup: {
    groupId: 'g',
    sessionTimeout: 30000,
    rebalanceTimeout: 60000,
    memberId: 'm',
    groupInstanceId: null,
    protocolType: 'consumer',
    groupProtocols: [{ name: 'range', metadata: Buffer.from([1, 2, 3]) }],
  },
  syncGroup: {
    groupId: 'g',
    generationId: 4,
    memberId: 'm',
    groupInstanceId: null,
    groupAssignment: [{ memberId: 'm', memberAssignment: Buffer.from([9, 9]) }],
  },
  heartbeat: { groupId: 'g', groupGenerationId: 4, memberId: 'm', groupInstanceId: null },
  leaveGroup: { groupId: 'g', memberId: 'm', groupInstanceId: null },
  offsetCommit: {
    groupId: 'g',
    groupGenerationId: 4,
    memberId: 'm',
    retentionTime: -1,
    topics: [{ topic: 'a', partitions: [{ partition: 0, offset: '17', metadata: 'meta' }] }],
  },
  offsetFetch: { groupId: 'g', topics: [{ topic: 'a', partitions: [{ partition: 0 }, { partition: 1 }] }] },
  createTopics: {
    topics: [
      {
        topic: 'a',
        numPartitions: 3,
        replicationFactor: 1,
        replicaAssignment: [],
        configEntries: [{ name: 'retention.ms', value: '1000' }],
      },
    ],
    validateOnly: false,
    timeout: 5000,
  },
  deleteTopics: { topics: ['a', 'b'], timeout: 5000 },
  describeConfigs: { resources: [{ type: 2, name: 'a', configNames: ['retention.ms'] }], includeSynonyms: true },
  initProducerId: { transactionalId: null, transactionTimeout: 5000 },
  describeGroups: { groupIds: ['g', 'h'] },
  listGroups: undefined,
  deleteGroups: ['g', 'h'],
  deleteRecords: { topics: [{ topic: 'a', partitions: [{ partition: 0, offset: '5' }] }], timeout: 5000 },
  createPartitions: { topicPartitions: [{ topic: 'a', count: 6 }], validateOnly: false, timeout: 5000 },
  alterConfigs: {
    resources: [{ type: 2, name: 'a', configEntries: [{ name: 'retention.ms', value: '1000' }] }],
    validateOnly: false,
  },
  // kafkajs's SASL mechanisms hand over the bytes already length-prefixed.
  saslAuthenticate: { authBytes: Buffer.concat([Buffer.from([0, 0, 0, 10]), Buffer.from('\0user\0pass')]) },
  saslHandshake: { mechanism: 'PLAIN' },
  addPartitionsToTxn: {
    transactionalId: 'tx',
    producerId: '7',
    producerEpoch: 2,
    topics: [{ topic: 'a', partitions: [0, 1] }],
  },
  addOffsetsToTxn: { transactionalId: 'tx', producerId: '7', producerEpoch: 2, groupId: 'g' },
  endTxn: { transactionalId: 'tx', producerId: '7', producerEpoch: 2, transactionResult: true },
  txnOffsetCommit: {
    transactionalId: 'tx',
    groupId: 'g',
    producerId: '7',
    producerEpoch: 2,
    topics: [{ topic: 'a', partitions: [{ partition: 0, offset: '5', metadata: null }] }],
  },
};

describe('the definitions agree with kafkajs', () => {
  for (const [name, args] of Object.entries(REQUEST_ARGS)) {
    it(`${name} requests: kafkajs bytes decode and re-encode unchanged, for every shared version`, async () => {
      const module = kafkajs(name);
      let checked = 0;
      for (const version of module.versions.map(Number)) {
        const { request } = module.protocol({ version })(args);
        const spec = API_BY_KEY.get(request.apiKey)!;
        if (!inVersions(spec.request.validVersions, version)) continue;
        const bytes = (await request.encode()).buffer;
        const r = new Reader(bytes);
        const decoded = decodeMessage(spec.request, version, r);
        expect(r.remaining, `${name} v${version} left bytes`).toBe(0);
        const w = new Writer();
        encodeMessage(spec.request, version, decoded, w);
        expect(w.toBuffer().equals(bytes), `${name} v${version} re-encodes`).toBe(true);
        checked++;
      }
      expect(checked).toBeGreaterThan(0);
    });
  }

  /** Responses we write, with what kafkajs must read from them (its own field names). */
  const responses: {
    name: string;
    value: Record<string, unknown>;
    expect: (decoded: Record<string, any>, version: number) => void;
  }[] = [
    {
      name: 'apiVersions',
      value: { errorCode: 0, apiKeys: [{ apiKey: 0, minVersion: 3, maxVersion: 9 }], throttleTimeMs: 0 },
      expect: (d) => expect(d.apiVersions).toEqual([{ apiKey: 0, minVersion: 3, maxVersion: 9 }]),
    },
    {
      name: 'metadata',
      value: {
        brokers: [{ nodeId: 0, host: 'h', port: 9092, rack: null }],
        clusterId: 'c',
        controllerId: 0,
        topics: [
          {
            errorCode: 0,
            name: 't',
            isInternal: false,
            partitions: [
              {
                errorCode: 0,
                partitionIndex: 2,
                leaderId: 0,
                leaderEpoch: 4,
                replicaNodes: [0],
                isrNodes: [0],
                offlineReplicas: [],
              },
            ],
          },
        ],
      },
      expect: (d) => {
        expect(d.brokers).toEqual([expect.objectContaining({ nodeId: 0, host: 'h', port: 9092 })]);
        expect(d.topicMetadata[0]).toMatchObject({
          topic: 't',
          partitionMetadata: [{ partitionId: 2, leader: 0, replicas: [0], isr: [0] }],
        });
      },
    },
    {
      name: 'produce',
      value: {
        responses: [
          {
            name: 't',
            partitionResponses: [{ index: 1, errorCode: 0, baseOffset: 42, logAppendTimeMs: -1, logStartOffset: 0 }],
          },
        ],
        throttleTimeMs: 0,
      },
      // kafkajs names the offset `offset` in v0-2 (listed only to be refused, but the format is Kafka's).
      expect: (d, version) =>
        expect(d.topics[0]).toMatchObject({
          topicName: 't',
          partitions: [{ partition: 1, errorCode: 0, [version < 3 ? 'offset' : 'baseOffset']: '42' }],
        }),
    },
    {
      name: 'fetch',
      value: {
        errorCode: 0,
        sessionId: 0,
        responses: [
          {
            topic: 't',
            partitions: [
              {
                partitionIndex: 0,
                errorCode: 0,
                highWatermark: 10,
                lastStableOffset: 10,
                logStartOffset: 0,
                abortedTransactions: null,
                preferredReadReplica: -1,
                records: Buffer.alloc(0),
              },
            ],
          },
        ],
      },
      expect: (d) =>
        expect(d.responses[0]).toMatchObject({
          topicName: 't',
          partitions: [{ partition: 0, errorCode: 0, highWatermark: '10', messages: [] }],
        }),
    },
    {
      name: 'listOffsets',
      value: {
        topics: [
          {
            name: 't',
            partitions: [{ partitionIndex: 0, errorCode: 0, oldStyleOffsets: [7], timestamp: -1, offset: 7 }],
          },
        ],
      },
      expect: (d, v) =>
        expect(d.responses[0].partitions[0]).toMatchObject(
          v === 0 ? { partition: 0, offsets: ['7'] } : { partition: 0, offset: '7' },
        ),
    },
    {
      name: 'findCoordinator',
      value: { errorCode: 0, errorMessage: null, nodeId: 0, host: 'h', port: 9092 },
      expect: (d) => expect(d.coordinator).toEqual({ nodeId: 0, host: 'h', port: 9092 }),
    },
    {
      name: 'joinGroup',
      value: {
        errorCode: 0,
        generationId: 3,
        protocolName: 'range',
        leader: 'm1',
        memberId: 'm1',
        members: [{ memberId: 'm1', groupInstanceId: null, metadata: Buffer.from([1]) }],
      },
      expect: (d) =>
        expect(d).toMatchObject({
          generationId: 3,
          groupProtocol: 'range',
          leaderId: 'm1',
          memberId: 'm1',
          members: [{ memberId: 'm1', memberMetadata: Buffer.from([1]) }],
        }),
    },
    {
      name: 'syncGroup',
      value: { errorCode: 0, assignment: Buffer.from([5, 6]) },
      expect: (d) => expect(d.memberAssignment).toEqual(Buffer.from([5, 6])),
    },
    { name: 'heartbeat', value: { errorCode: 0 }, expect: (d) => expect(d.errorCode).toBe(0) },
    {
      name: 'offsetFetch',
      value: {
        topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 12, metadata: '', errorCode: 0 }] }],
        errorCode: 0,
      },
      expect: (d) => expect(d.responses[0]).toMatchObject({ topic: 't', partitions: [{ partition: 0, offset: '12' }] }),
    },
    {
      name: 'offsetCommit',
      value: { topics: [{ name: 't', partitions: [{ partitionIndex: 0, errorCode: 0 }] }] },
      expect: (d) => expect(d.responses[0]).toMatchObject({ topic: 't', partitions: [{ partition: 0, errorCode: 0 }] }),
    },
    {
      name: 'createTopics',
      value: { topics: [{ name: 't', errorCode: 0, errorMessage: null }] },
      expect: (d) => expect(d.topicErrors[0]).toMatchObject({ topic: 't', errorCode: 0 }),
    },
    {
      name: 'describeConfigs',
      value: {
        results: [
          {
            errorCode: 0,
            errorMessage: null,
            resourceType: 2,
            resourceName: 't',
            configs: [
              {
                name: 'retention.ms',
                value: '5',
                readOnly: false,
                isDefault: false,
                configSource: 1,
                isSensitive: false,
                synonyms: [],
              },
            ],
          },
        ],
      },
      expect: (d) =>
        expect(d.resources[0]).toMatchObject({
          resourceName: 't',
          configEntries: [{ configName: 'retention.ms', configValue: '5' }],
        }),
    },
    {
      name: 'initProducerId',
      value: { errorCode: 0, producerId: 77, producerEpoch: 2 },
      expect: (d) => expect(d).toMatchObject({ producerId: '77', producerEpoch: 2 }),
    },
    {
      name: 'describeGroups',
      value: {
        groups: [
          {
            errorCode: 0,
            groupId: 'g',
            groupState: 'Stable',
            protocolType: 'consumer',
            protocolData: 'range',
            members: [
              {
                memberId: 'm',
                clientId: 'c',
                clientHost: '/h',
                memberMetadata: Buffer.alloc(0),
                memberAssignment: Buffer.alloc(0),
              },
            ],
          },
        ],
      },
      expect: (d) =>
        expect(d.groups[0]).toMatchObject({
          groupId: 'g',
          state: 'Stable',
          protocol: 'range',
          members: [{ memberId: 'm', clientId: 'c' }],
        }),
    },
    {
      name: 'listGroups',
      value: { errorCode: 0, groups: [{ groupId: 'g', protocolType: 'consumer' }] },
      expect: (d) => expect(d.groups).toEqual([{ groupId: 'g', protocolType: 'consumer' }]),
    },
  ];
  for (const c of responses) {
    it(`${c.name} responses decode in kafkajs, for every shared version`, async () => {
      const module = kafkajs(c.name);
      let checked = 0;
      for (const version of module.versions.map(Number)) {
        const { request, response } = module.protocol({ version })(REQUEST_ARGS[c.name]);
        const spec = API_BY_KEY.get(request.apiKey)!;
        if (!inVersions(spec.response.validVersions, version)) continue;
        const w = new Writer();
        encodeMessage(spec.response, version, c.value, w);
        c.expect(await response.decode(w.toBuffer()), version);
        checked++;
      }
      expect(checked).toBeGreaterThan(0);
    });
  }
});
