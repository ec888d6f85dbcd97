/**
 * The share groups' admin RPCs (KIP-932): DescribeShareGroupOffsets (90), AlterShareGroupOffsets
 * (91) and DeleteShareGroupOffsets (92), the admin client's listShareGroupOffsets,
 * alterShareGroupOffsets and deleteShareGroupOffsets. Version 0 of each is Kafka 4.1's stable
 * version (unlike the other share RPCs, whose v0 was 4.0's early access); DescribeShareGroupOffsets
 * v1 (Kafka 4.2, KIP-1226) adds each partition's Lag.
 */
import { arrayOf, f, message, type ApiSpec } from '../schema.js';
import { errorCode, errorMessage, throttleTimeMs } from './fragments.js';

export const DescribeShareGroupOffsets: ApiSpec = {
  apiKey: 90,
  name: 'DescribeShareGroupOffsets',
  request: message('DescribeShareGroupOffsetsRequest', '0-1', '0+', [
    f(
      'groups',
      arrayOf([
        f('groupId', 'string', '0+'),
        // Null: every share-partition the group has state for.
        f('topics', arrayOf([f('topicName', 'string', '0+'), f('partitions', arrayOf('int32'), '0+')]), '0+', {
          nullableVersions: '0+',
          default: null,
        }),
      ]),
      '0+',
    ),
  ]),
  response: message('DescribeShareGroupOffsetsResponse', '0-1', '0+', [
    throttleTimeMs(),
    f(
      'groups',
      arrayOf([
        f('groupId', 'string', '0+'),
        f(
          'topics',
          arrayOf([
            f('topicName', 'string', '0+'),
            f('topicId', 'uuid', '0+'),
            f(
              'partitions',
              arrayOf([
                f('partitionIndex', 'int32', '0+'),
                f('startOffset', 'int64', '0+'),
                f('leaderEpoch', 'int32', '0+'),
                f('lag', 'int64', '1+', { default: -1 }),
                errorCode(),
                errorMessage(),
              ]),
              '0+',
            ),
          ]),
          '0+',
        ),
        errorCode(),
        errorMessage(),
      ]),
      '0+',
    ),
  ]),
};

export const AlterShareGroupOffsets: ApiSpec = {
  apiKey: 91,
  name: 'AlterShareGroupOffsets',
  request: message('AlterShareGroupOffsetsRequest', '0', '0+', [
    f('groupId', 'string', '0+'),
    f(
      'topics',
      arrayOf([
        f('topicName', 'string', '0+'),
        f('partitions', arrayOf([f('partitionIndex', 'int32', '0+'), f('startOffset', 'int64', '0+')]), '0+'),
      ]),
      '0+',
    ),
  ]),
  response: message('AlterShareGroupOffsetsResponse', '0', '0+', [
    throttleTimeMs(),
    errorCode(),
    errorMessage(),
    f(
      'responses',
      arrayOf([
        f('topicName', 'string', '0+'),
        f('topicId', 'uuid', '0+'),
        f('partitions', arrayOf([f('partitionIndex', 'int32', '0+'), errorCode(), errorMessage()]), '0+'),
      ]),
      '0+',
    ),
  ]),
};

export const DeleteShareGroupOffsets: ApiSpec = {
  apiKey: 92,
  name: 'DeleteShareGroupOffsets',
  request: message('DeleteShareGroupOffsetsRequest', '0', '0+', [
    f('groupId', 'string', '0+'),
    f('topics', arrayOf([f('topicName', 'string', '0+')]), '0+'),
  ]),
  response: message('DeleteShareGroupOffsetsResponse', '0', '0+', [
    throttleTimeMs(),
    errorCode(),
    errorMessage(),
    f(
      'responses',
      arrayOf([f('topicName', 'string', '0+'), f('topicId', 'uuid', '0+'), errorCode(), errorMessage()]),
      '0+',
    ),
  ]),
};
