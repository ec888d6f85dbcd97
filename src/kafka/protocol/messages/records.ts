/** Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords, InitProducerId. */
import { arrayOf, f, message, structOf, type ApiSpec } from '../schema.js';
import {
  errorCode,
  nullableString,
  partitionResult,
  throttleThenError,
  throttleTimeMs,
  topicsOf,
} from './fragments.js';

/**
 * Versions 0-2 (magic 0 and 1 message sets) are defined only to be answered UNSUPPORTED_VERSION,
 * as Kafka 4.0 advertises them (KIP-896, KAFKA-18659): librdkafka keys gzip, snappy and lz4 on
 * Produce v0-2 being listed and sends uncompressed, silently, to a broker that lists v3+ only.
 */
export const Produce: ApiSpec = {
  apiKey: 0,
  name: 'Produce',
  request: message('ProduceRequest', '0-9', '9+', [
    f('transactionalId', 'string', '3+', { nullableVersions: '0+', default: null }),
    f('acks', 'int16', '0+'),
    f('timeoutMs', 'int32', '0+'),
    topicsOf('topicData', [f('index', 'int32', '0+'), f('records', 'records', '0+', { nullableVersions: '0+' })], {
      partitionsField: 'partitionData',
    }),
  ]),
  response: message('ProduceResponse', '0-9', '9+', [
    topicsOf(
      'responses',
      [
        f('index', 'int32', '0+'),
        errorCode(),
        f('baseOffset', 'int64', '0+'),
        f('logAppendTimeMs', 'int64', '2+', { default: -1 }),
        f('logStartOffset', 'int64', '5+', { default: -1 }),
        f(
          'recordErrors',
          arrayOf([f('batchIndex', 'int32', '8+'), nullableString('batchIndexErrorMessage', '8+')]),
          '8+',
        ),
        nullableString('errorMessage', '8+'),
      ],
      { partitionsField: 'partitionResponses' },
    ),
    throttleTimeMs('1+'),
  ]),
};

/**
 * v13 names topics by id (KIP-516) in the request, the forgotten topics and the answer; v14 is
 * v13 (tiered storage's error); v15 moves a follower's id into the tagged ReplicaState (KIP-903);
 * v16 adds the tagged NodeEndpoints of new leaders (KIP-951); v17 the tagged replica directory id
 * (KIP-853). Fields of followers are read and not used: this listener's fetchers are consumers.
 */
export const Fetch: ApiSpec = {
  apiKey: 1,
  name: 'Fetch',
  request: message('FetchRequest', '4-17', '12+', [
    f('clusterId', 'string', '12+', { nullableVersions: '12+', default: null, tag: 0, taggedVersions: '12+' }),
    f('replicaId', 'int32', '0-14', { default: -1 }),
    f(
      'replicaState',
      structOf([f('replicaId', 'int32', '15+', { default: -1 }), f('replicaEpoch', 'int64', '15+', { default: -1 })]),
      '15+',
      { tag: 1, taggedVersions: '15+' },
    ),
    f('maxWaitMs', 'int32', '0+'),
    f('minBytes', 'int32', '0+'),
    f('maxBytes', 'int32', '3+', { default: 0x7fffffff }),
    f('isolationLevel', 'int8', '4+'),
    f('sessionId', 'int32', '7+'),
    f('sessionEpoch', 'int32', '7+', { default: -1 }),
    f(
      'topics',
      arrayOf([
        f('topic', 'string', '0-12'),
        f('topicId', 'uuid', '13+'),
        f(
          'partitions',
          arrayOf([
            f('partition', 'int32', '0+'),
            f('currentLeaderEpoch', 'int32', '9+', { default: -1 }),
            f('fetchOffset', 'int64', '0+'),
            f('lastFetchedEpoch', 'int32', '12+', { default: -1 }),
            f('logStartOffset', 'int64', '5+', { default: -1 }),
            f('partitionMaxBytes', 'int32', '0+'),
            f('replicaDirectoryId', 'uuid', '17+', { tag: 0, taggedVersions: '17+' }),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
    f(
      'forgottenTopicsData',
      arrayOf([f('topic', 'string', '7-12'), f('topicId', 'uuid', '13+'), f('partitions', arrayOf('int32'), '7+')]),
      '7+',
    ),
    f('rackId', 'string', '11+'),
  ]),
  response: message('FetchResponse', '4-17', '12+', [
    ...throttleThenError('1+', '7+'),
    f('sessionId', 'int32', '7+'),
    f(
      'responses',
      arrayOf([
        f('topic', 'string', '0-12'),
        f('topicId', 'uuid', '13+'),
        f(
          'partitions',
          arrayOf([
            ...partitionResult(),
            f('highWatermark', 'int64', '0+'),
            f('lastStableOffset', 'int64', '4+', { default: -1 }),
            f('logStartOffset', 'int64', '5+', { default: -1 }),
            f(
              'divergingEpoch',
              structOf([f('epoch', 'int32', '12+', { default: -1 }), f('endOffset', 'int64', '12+', { default: -1 })]),
              '12+',
              { tag: 0, taggedVersions: '12+' },
            ),
            f(
              'currentLeader',
              structOf([
                f('leaderId', 'int32', '12+', { default: -1 }),
                f('leaderEpoch', 'int32', '12+', { default: -1 }),
              ]),
              '12+',
              { tag: 1, taggedVersions: '12+' },
            ),
            f(
              'snapshotId',
              structOf([f('endOffset', 'int64', '0+', { default: -1 }), f('epoch', 'int32', '0+', { default: -1 })]),
              '12+',
              { tag: 2, taggedVersions: '12+' },
            ),
            f('abortedTransactions', arrayOf([f('producerId', 'int64', '4+'), f('firstOffset', 'int64', '4+')]), '4+', {
              nullableVersions: '4+',
              default: null,
            }),
            f('preferredReadReplica', 'int32', '11+', { default: -1 }),
            f('records', 'records', '0+', { nullableVersions: '0+' }),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
    f(
      'nodeEndpoints',
      arrayOf([
        f('nodeId', 'int32', '16+'),
        f('host', 'string', '16+'),
        f('port', 'int32', '16+'),
        nullableString('rack', '16+'),
      ]),
      '16+',
      { tag: 0, taggedVersions: '16+' },
    ),
  ]),
};

export const ListOffsets: ApiSpec = {
  apiKey: 2,
  name: 'ListOffsets',
  request: message('ListOffsetsRequest', '0-6', '6+', [
    f('replicaId', 'int32', '0+'),
    f('isolationLevel', 'int8', '2+'),
    topicsOf('topics', [
      f('partitionIndex', 'int32', '0+'),
      f('currentLeaderEpoch', 'int32', '4+', { default: -1 }),
      f('timestamp', 'int64', '0+'),
      f('maxNumOffsets', 'int32', '0', { default: 1 }),
    ]),
  ]),
  response: message('ListOffsetsResponse', '0-6', '6+', [
    throttleTimeMs('2+'),
    topicsOf(
      'topics',
      partitionResult(
        f('oldStyleOffsets', arrayOf('int64'), '0'),
        f('timestamp', 'int64', '1+', { default: -1 }),
        f('offset', 'int64', '1+', { default: -1 }),
        f('leaderEpoch', 'int32', '4+', { default: -1 }),
      ),
    ),
  ]),
};

export const OffsetForLeaderEpoch: ApiSpec = {
  apiKey: 23,
  name: 'OffsetForLeaderEpoch',
  request: message('OffsetForLeaderEpochRequest', '0-4', '4+', [
    f('replicaId', 'int32', '3+', { default: -2 }),
    topicsOf(
      'topics',
      [
        f('partition', 'int32', '0+'),
        f('currentLeaderEpoch', 'int32', '2+', { default: -1 }),
        f('leaderEpoch', 'int32', '0+'),
      ],
      { topic: 'topic' },
    ),
  ]),
  response: message('OffsetForLeaderEpochResponse', '0-4', '4+', [
    throttleTimeMs('2+'),
    topicsOf(
      'topics',
      [
        errorCode(),
        f('partition', 'int32', '0+'),
        f('leaderEpoch', 'int32', '1+', { default: -1 }),
        f('endOffset', 'int64', '0+', { default: -1 }),
      ],
      { topic: 'topic' },
    ),
  ]),
};

export const DeleteRecords: ApiSpec = {
  apiKey: 21,
  name: 'DeleteRecords',
  request: message('DeleteRecordsRequest', '0-2', '2+', [
    topicsOf('topics', [f('partitionIndex', 'int32', '0+'), f('offset', 'int64', '0+')]),
    f('timeoutMs', 'int32', '0+'),
  ]),
  response: message('DeleteRecordsResponse', '0-2', '2+', [
    throttleTimeMs(),
    topicsOf('topics', [f('partitionIndex', 'int32', '0+'), f('lowWatermark', 'int64', '0+'), errorCode()]),
  ]),
};

export const InitProducerId: ApiSpec = {
  apiKey: 22,
  name: 'InitProducerId',
  request: message('InitProducerIdRequest', '0-4', '2+', [
    f('transactionalId', 'string', '0+', { nullableVersions: '0+' }),
    f('transactionTimeoutMs', 'int32', '0+'),
    f('producerId', 'int64', '3+', { default: -1 }),
    f('producerEpoch', 'int16', '3+', { default: -1 }),
  ]),
  response: message('InitProducerIdResponse', '0-4', '2+', [
    ...throttleThenError(),
    f('producerId', 'int64', '0+', { default: -1 }),
    f('producerEpoch', 'int16', '0+'),
  ]),
};
