/**
 * Share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge,
 * at the versions Kafka 4.1 and 4.2 speak. Version 0 of each was Kafka 4.0's early access and was
 * removed in 4.1, so none is defined (ApiVersions advertises v1 up). ShareFetch v2 and
 * ShareAcknowledge v2 add the Renew acknowledge type (KIP-1222) and ShareFetch's acquire mode
 * (KIP-1206).
 */
import { arrayOf, f, message, structOf, type ApiSpec, type Field } from '../schema.js';
import { errorCode, errorMessage, nullableString, throttleTimeMs } from './fragments.js';

/** A topic id and partition indexes, as share groups name assignments. */
const topicIdPartitions = (versions = '0+', withName = false): Field[] => [
  f('topicId', 'uuid', versions),
  ...(withName ? [f('topicName', 'string', versions)] : []),
  f('partitions', arrayOf('int32'), versions),
];

export const ShareGroupHeartbeat: ApiSpec = {
  apiKey: 76,
  name: 'ShareGroupHeartbeat',
  request: message('ShareGroupHeartbeatRequest', '1', '0+', [
    f('groupId', 'string', '0+'),
    f('memberId', 'string', '0+'),
    f('memberEpoch', 'int32', '0+'),
    nullableString('rackId', '0+'),
    f('subscribedTopicNames', arrayOf('string'), '0+', { nullableVersions: '0+', default: null }),
  ]),
  response: message('ShareGroupHeartbeatResponse', '1', '0+', [
    throttleTimeMs(),
    errorCode(),
    errorMessage(),
    nullableString('memberId', '0+'),
    f('memberEpoch', 'int32', '0+'),
    f('heartbeatIntervalMs', 'int32', '0+'),
    f('assignment', structOf([f('topicPartitions', arrayOf(topicIdPartitions()), '0+')]), '0+', {
      nullableVersions: '0+',
      default: null,
    }),
  ]),
};

export const ShareGroupDescribe: ApiSpec = {
  apiKey: 77,
  name: 'ShareGroupDescribe',
  request: message('ShareGroupDescribeRequest', '1', '1+', [
    f('groupIds', arrayOf('string'), '1+'),
    f('includeAuthorizedOperations', 'bool', '1+'),
  ]),
  response: message('ShareGroupDescribeResponse', '1', '1+', [
    throttleTimeMs('1+'),
    f(
      'groups',
      arrayOf([
        errorCode('1+'),
        errorMessage('1+'),
        f('groupId', 'string', '1+'),
        f('groupState', 'string', '1+'),
        f('groupEpoch', 'int32', '1+'),
        f('assignmentEpoch', 'int32', '1+'),
        f('assignorName', 'string', '1+'),
        f(
          'members',
          arrayOf([
            f('memberId', 'string', '1+'),
            nullableString('rackId', '1+'),
            f('memberEpoch', 'int32', '1+'),
            f('clientId', 'string', '1+'),
            f('clientHost', 'string', '1+'),
            f('subscribedTopicNames', arrayOf('string'), '1+'),
            f('assignment', structOf([f('topicPartitions', arrayOf(topicIdPartitions('1+', true)), '1+')]), '1+'),
          ]),
          '1+',
        ),
        f('authorizedOperations', 'int32', '1+', { default: -2147483648 }),
      ]),
      '1+',
    ),
  ]),
};

/** Offsets first..last (inclusive) with one type for all, or one per offset: 0 gap, 1 accept, 2 release, 3 reject, 4 renew. */
const acknowledgementBatches = f(
  'acknowledgementBatches',
  arrayOf([
    f('firstOffset', 'int64', '0+'),
    f('lastOffset', 'int64', '0+'),
    f('acknowledgeTypes', arrayOf('int8'), '0+'),
  ]),
  '0+',
);

/** Who a share request is from: group, member and share session epoch (0 opens, -1 closes). */
const shareSession: Field[] = [
  nullableString('groupId', '0+'),
  f('memberId', 'string', '0+', { nullableVersions: '0+' }),
  f('shareSessionEpoch', 'int32', '0+'),
];

const currentLeader = f(
  'currentLeader',
  structOf([f('leaderId', 'int32', '0+'), f('leaderEpoch', 'int32', '0+')]),
  '0+',
);

const nodeEndpoints = f(
  'nodeEndpoints',
  arrayOf([
    f('nodeId', 'int32', '0+'),
    f('host', 'string', '0+'),
    f('port', 'int32', '0+'),
    nullableString('rack', '0+'),
  ]),
  '0+',
);

export const ShareFetch: ApiSpec = {
  apiKey: 78,
  name: 'ShareFetch',
  request: message('ShareFetchRequest', '1-2', '0+', [
    ...shareSession,
    f('maxWaitMs', 'int32', '0+'),
    f('minBytes', 'int32', '0+'),
    f('maxBytes', 'int32', '0+', { default: 0x7fffffff }),
    f('maxRecords', 'int32', '1+'),
    f('batchSize', 'int32', '1+'),
    f('shareAcquireMode', 'int8', '2+'),
    f(
      'topics',
      arrayOf([
        f('topicId', 'uuid', '0+'),
        f(
          'partitions',
          arrayOf([f('partitionIndex', 'int32', '0+'), f('partitionMaxBytes', 'int32', '0'), acknowledgementBatches]),
          '0+',
        ),
      ]),
      '0+',
    ),
    f('forgottenTopicsData', arrayOf(topicIdPartitions()), '0+'),
  ]),
  response: message('ShareFetchResponse', '1-2', '0+', [
    throttleTimeMs(),
    errorCode(),
    errorMessage(),
    f('acquisitionLockTimeoutMs', 'int32', '0+'),
    f(
      'responses',
      arrayOf([
        f('topicId', 'uuid', '0+'),
        f(
          'partitions',
          arrayOf([
            f('partitionIndex', 'int32', '0+'),
            errorCode(),
            errorMessage(),
            f('acknowledgeErrorCode', 'int16', '0+'),
            nullableString('acknowledgeErrorMessage', '0+'),
            currentLeader,
            f('records', 'records', '0+', { nullableVersions: '0+' }),
            f(
              'acquiredRecords',
              arrayOf([
                f('firstOffset', 'int64', '0+'),
                f('lastOffset', 'int64', '0+'),
                f('deliveryCount', 'int16', '0+'),
              ]),
              '0+',
            ),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
    nodeEndpoints,
  ]),
};

export const ShareAcknowledge: ApiSpec = {
  apiKey: 79,
  name: 'ShareAcknowledge',
  request: message('ShareAcknowledgeRequest', '1-2', '0+', [
    ...shareSession,
    f('isRenewAck', 'bool', '2+'),
    f(
      'topics',
      arrayOf([
        f('topicId', 'uuid', '0+'),
        f('partitions', arrayOf([f('partitionIndex', 'int32', '0+'), acknowledgementBatches]), '0+'),
      ]),
      '0+',
    ),
  ]),
  response: message('ShareAcknowledgeResponse', '1-2', '0+', [
    throttleTimeMs(),
    errorCode(),
    errorMessage(),
    f('acquisitionLockTimeoutMs', 'int32', '2+'),
    f(
      'responses',
      arrayOf([
        f('topicId', 'uuid', '0+'),
        f(
          'partitions',
          arrayOf([f('partitionIndex', 'int32', '0+'), errorCode(), errorMessage(), currentLeader]),
          '0+',
        ),
      ]),
      '0+',
    ),
    nodeEndpoints,
  ]),
};
