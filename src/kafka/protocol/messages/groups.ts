/** The classic group protocol (FindCoordinator .. LeaveGroup), group admin, and committed offsets. */
import { arrayOf, f, message, type ApiSpec } from '../schema.js';
import {
  errorCode,
  errorMessage,
  memberIdentity,
  namedResult,
  nullableString,
  partitionResult,
  throttleThenError,
  throttleTimeMs,
  topicsOf,
} from './fragments.js';

/** Where a coordinator is: node id, host and port. */
const coordinatorAt = (versions: string) => [
  f('nodeId', 'int32', versions),
  f('host', 'string', versions),
  f('port', 'int32', versions),
];

export const FindCoordinator: ApiSpec = {
  apiKey: 10,
  name: 'FindCoordinator',
  request: message('FindCoordinatorRequest', '0-4', '3+', [
    f('key', 'string', '0-3'),
    f('keyType', 'int8', '1+'),
    f('coordinatorKeys', arrayOf('string'), '4+'),
  ]),
  response: message('FindCoordinatorResponse', '0-4', '3+', [
    ...throttleThenError('1+', '0-3'),
    errorMessage('1-3'),
    ...coordinatorAt('0-3'),
    f(
      'coordinators',
      arrayOf([f('key', 'string', '4+'), ...coordinatorAt('4+'), errorCode('4+'), errorMessage('4+')]),
      '4+',
    ),
  ]),
};

export const JoinGroup: ApiSpec = {
  apiKey: 11,
  name: 'JoinGroup',
  request: message('JoinGroupRequest', '0-7', '6+', [
    f('groupId', 'string', '0+'),
    f('sessionTimeoutMs', 'int32', '0+'),
    f('rebalanceTimeoutMs', 'int32', '1+', { default: -1 }),
    ...memberIdentity('5+'),
    f('protocolType', 'string', '0+'),
    f('protocols', arrayOf([f('name', 'string', '0+'), f('metadata', 'bytes', '0+')]), '0+'),
  ]),
  response: message('JoinGroupResponse', '0-7', '6+', [
    ...throttleThenError('2+'),
    f('generationId', 'int32', '0+', { default: -1 }),
    nullableString('protocolType', '7+'),
    f('protocolName', 'string', '0+', { nullableVersions: '7+' }),
    f('leader', 'string', '0+'),
    f('memberId', 'string', '0+'),
    f('members', arrayOf([...memberIdentity('5+'), f('metadata', 'bytes', '0+')]), '0+'),
  ]),
};

/** groupId, generationId, memberId, groupInstanceId: who a Heartbeat or SyncGroup is from. */
const memberOfGeneration = (instanceVersions: string) => [
  f('groupId', 'string', '0+'),
  f('generationId', 'int32', '0+'),
  ...memberIdentity(instanceVersions),
];

export const Heartbeat: ApiSpec = {
  apiKey: 12,
  name: 'Heartbeat',
  request: message('HeartbeatRequest', '0-4', '4+', memberOfGeneration('3+')),
  response: message('HeartbeatResponse', '0-4', '4+', throttleThenError('1+')),
};

export const LeaveGroup: ApiSpec = {
  apiKey: 13,
  name: 'LeaveGroup',
  request: message('LeaveGroupRequest', '0-4', '4+', [
    f('groupId', 'string', '0+'),
    f('memberId', 'string', '0-2'),
    f('members', arrayOf(memberIdentity('3+', '3+')), '3+'),
  ]),
  response: message('LeaveGroupResponse', '0-4', '4+', [
    ...throttleThenError('1+'),
    f('members', arrayOf([...memberIdentity('3+', '3+'), errorCode('3+')]), '3+'),
  ]),
};

export const SyncGroup: ApiSpec = {
  apiKey: 14,
  name: 'SyncGroup',
  request: message('SyncGroupRequest', '0-5', '4+', [
    ...memberOfGeneration('3+'),
    nullableString('protocolType', '5+'),
    nullableString('protocolName', '5+'),
    f('assignments', arrayOf([f('memberId', 'string', '0+'), f('assignment', 'bytes', '0+')]), '0+'),
  ]),
  response: message('SyncGroupResponse', '0-5', '4+', [
    ...throttleThenError('1+'),
    nullableString('protocolType', '5+'),
    nullableString('protocolName', '5+'),
    f('assignment', 'bytes', '0+'),
  ]),
};

export const DescribeGroups: ApiSpec = {
  apiKey: 15,
  name: 'DescribeGroups',
  // v6 (KIP-1043) answers GROUP_ID_NOT_FOUND, with a message, for a group that is not there.
  request: message('DescribeGroupsRequest', '0-6', '5+', [
    f('groups', arrayOf('string'), '0+'),
    f('includeAuthorizedOperations', 'bool', '3+'),
  ]),
  response: message('DescribeGroupsResponse', '0-6', '5+', [
    throttleTimeMs('1+'),
    f(
      'groups',
      arrayOf([
        errorCode(),
        errorMessage('6+'),
        f('groupId', 'string', '0+'),
        f('groupState', 'string', '0+'),
        f('protocolType', 'string', '0+'),
        f('protocolData', 'string', '0+'),
        f(
          'members',
          arrayOf([
            ...memberIdentity('4+'),
            f('clientId', 'string', '0+'),
            f('clientHost', 'string', '0+'),
            f('memberMetadata', 'bytes', '0+'),
            f('memberAssignment', 'bytes', '0+'),
          ]),
          '0+',
        ),
        f('authorizedOperations', 'int32', '3+', { default: -2147483648 }),
      ]),
      '0+',
    ),
  ]),
};

/** v5 (KIP-848) filters by group type and answers each group's: classic, consumer or share. */
export const ListGroups: ApiSpec = {
  apiKey: 16,
  name: 'ListGroups',
  request: message('ListGroupsRequest', '0-5', '3+', [
    f('statesFilter', arrayOf('string'), '4+'),
    f('typesFilter', arrayOf('string'), '5+'),
  ]),
  response: message('ListGroupsResponse', '0-5', '3+', [
    ...throttleThenError('1+'),
    f(
      'groups',
      arrayOf([
        f('groupId', 'string', '0+'),
        f('protocolType', 'string', '0+'),
        f('groupState', 'string', '4+'),
        f('groupType', 'string', '5+'),
      ]),
      '0+',
    ),
  ]),
};

export const DeleteGroups: ApiSpec = {
  apiKey: 42,
  name: 'DeleteGroups',
  request: message('DeleteGroupsRequest', '0-2', '2+', [f('groupsNames', arrayOf('string'), '0+')]),
  response: message('DeleteGroupsResponse', '0-2', '2+', [
    throttleTimeMs(),
    f('results', arrayOf(namedResult('groupId')), '0+'),
  ]),
};

/** A topic id's partitions, as KIP-848 names topics. */
const topicIdPartitions = [f('topicId', 'uuid', '0+'), f('partitions', arrayOf('int32'), '0+')];

/** KIP-848: the server-side consumer group protocol. */
export const ConsumerGroupHeartbeat: ApiSpec = {
  apiKey: 68,
  name: 'ConsumerGroupHeartbeat',
  request: message('ConsumerGroupHeartbeatRequest', '0', '0+', [
    f('groupId', 'string', '0+'),
    f('memberId', 'string', '0+'),
    f('memberEpoch', 'int32', '0+'),
    nullableString('instanceId', '0+'),
    nullableString('rackId', '0+'),
    f('rebalanceTimeoutMs', 'int32', '0+', { default: -1 }),
    f('subscribedTopicNames', arrayOf('string'), '0+', { nullableVersions: '0+', default: null }),
    nullableString('serverAssignor', '0+'),
    f('topicPartitions', arrayOf(topicIdPartitions), '0+', { nullableVersions: '0+', default: null }),
  ]),
  response: message('ConsumerGroupHeartbeatResponse', '0', '0+', [
    ...throttleThenError(),
    errorMessage(),
    nullableString('memberId', '0+'),
    f('memberEpoch', 'int32', '0+'),
    f('heartbeatIntervalMs', 'int32', '0+'),
    f('assignment', { struct: [f('topicPartitions', arrayOf(topicIdPartitions), '0+')] }, '0+', {
      nullableVersions: '0+',
      default: null,
    }),
  ]),
};

/**
 * v9 is the first version a KIP-848 member commits with: the body is v8's, and the generation
 * field carries the member epoch (STALE_MEMBER_EPOCH when it is not the member's).
 */
export const OffsetCommit: ApiSpec = {
  apiKey: 8,
  name: 'OffsetCommit',
  request: message('OffsetCommitRequest', '0-9', '8+', [
    f('groupId', 'string', '0+'),
    f('generationIdOrMemberEpoch', 'int32', '1+', { default: -1 }),
    ...memberIdentity('7+', '1+'),
    f('retentionTimeMs', 'int64', '2-4', { default: -1 }),
    topicsOf('topics', [
      f('partitionIndex', 'int32', '0+'),
      f('committedOffset', 'int64', '0+'),
      f('committedLeaderEpoch', 'int32', '6+', { default: -1 }),
      f('commitTimestamp', 'int64', '1', { default: -1 }),
      f('committedMetadata', 'string', '0+', { nullableVersions: '0+' }),
    ]),
  ]),
  response: message('OffsetCommitResponse', '0-9', '8+', [throttleTimeMs('3+'), topicsOf('topics', partitionResult())]),
};

/** A committed offset as OffsetFetch answers it (per partition, up to v7 and inside each group from v8). */
const fetchedOffset = [
  f('partitionIndex', 'int32', '0+'),
  f('committedOffset', 'int64', '0+'),
  f('committedLeaderEpoch', 'int32', '5+', { default: -1 }),
  f('metadata', 'string', '0+', { nullableVersions: '0+' }),
  errorCode(),
];

/**
 * v8 asks for many groups at once (the group id and topics move into `groups`); v9 adds the
 * KIP-848 member id and epoch, checked when given.
 */
export const OffsetFetch: ApiSpec = {
  apiKey: 9,
  name: 'OffsetFetch',
  request: message('OffsetFetchRequest', '0-9', '6+', [
    f('groupId', 'string', '0-7'),
    topicsOf('topics', 'int32', { partitionsField: 'partitionIndexes', versions: '0-7', nullableVersions: '2-7' }),
    f(
      'groups',
      arrayOf([
        f('groupId', 'string', '8+'),
        nullableString('memberId', '9+'),
        f('memberEpoch', 'int32', '9+', { default: -1 }),
        topicsOf('topics', 'int32', { partitionsField: 'partitionIndexes', versions: '8+', nullableVersions: '8+' }),
      ]),
      '8+',
    ),
    f('requireStable', 'bool', '7+'),
  ]),
  response: message('OffsetFetchResponse', '0-9', '6+', [
    throttleTimeMs('3+'),
    topicsOf('topics', fetchedOffset, { versions: '0-7' }),
    errorCode('2-7'),
    f(
      'groups',
      arrayOf([f('groupId', 'string', '8+'), topicsOf('topics', fetchedOffset, { versions: '8+' }), errorCode('8+')]),
      '8+',
    ),
  ]),
};

export const OffsetDelete: ApiSpec = {
  apiKey: 47,
  name: 'OffsetDelete',
  request: message('OffsetDeleteRequest', '0', 'none', [
    f('groupId', 'string', '0+'),
    topicsOf('topics', [f('partitionIndex', 'int32', '0+')]),
  ]),
  response: message('OffsetDeleteResponse', '0', 'none', [
    errorCode(),
    throttleTimeMs(),
    topicsOf('topics', partitionResult()),
  ]),
};
