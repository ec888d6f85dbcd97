/**
 * The producer side of transactions: AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and
 * TxnOffsetCommit, in the versions clients send (v4+ of AddPartitionsToTxn is the brokers' batched
 * form, KIP-890, and the later versions of the others differ only in what KIP-890 clients expect).
 */
import { f, message, type ApiSpec } from '../schema.js';
import {
  memberIdentity,
  partitionResult,
  producerIdAndEpoch,
  throttleThenError,
  throttleTimeMs,
  topicsOf,
} from './fragments.js';

export const AddPartitionsToTxn: ApiSpec = {
  apiKey: 24,
  name: 'AddPartitionsToTxn',
  request: message('AddPartitionsToTxnRequest', '0-3', '3+', [
    f('v3AndBelowTransactionalId', 'string', '0-3'),
    f('v3AndBelowProducerId', 'int64', '0-3'),
    f('v3AndBelowProducerEpoch', 'int16', '0-3'),
    topicsOf('v3AndBelowTopics', 'int32', { versions: '0-3' }),
  ]),
  response: message('AddPartitionsToTxnResponse', '0-3', '3+', [
    throttleTimeMs(),
    topicsOf('resultsByTopicV3AndBelow', [f('partitionIndex', 'int32', '0+'), f('partitionErrorCode', 'int16', '0+')], {
      partitionsField: 'resultsByPartition',
      versions: '0-3',
    }),
  ]),
};

export const AddOffsetsToTxn: ApiSpec = {
  apiKey: 25,
  name: 'AddOffsetsToTxn',
  request: message('AddOffsetsToTxnRequest', '0-3', '3+', [
    f('transactionalId', 'string', '0+'),
    ...producerIdAndEpoch(),
    f('groupId', 'string', '0+'),
  ]),
  response: message('AddOffsetsToTxnResponse', '0-3', '3+', throttleThenError()),
};

export const EndTxn: ApiSpec = {
  apiKey: 26,
  name: 'EndTxn',
  request: message('EndTxnRequest', '0-3', '3+', [
    f('transactionalId', 'string', '0+'),
    ...producerIdAndEpoch(),
    f('committed', 'bool', '0+'),
  ]),
  response: message('EndTxnResponse', '0-3', '3+', throttleThenError()),
};

export const TxnOffsetCommit: ApiSpec = {
  apiKey: 28,
  name: 'TxnOffsetCommit',
  request: message('TxnOffsetCommitRequest', '0-3', '3+', [
    f('transactionalId', 'string', '0+'),
    f('groupId', 'string', '0+'),
    ...producerIdAndEpoch(),
    f('generationId', 'int32', '3+', { default: -1 }),
    ...memberIdentity('3+', '3+'),
    topicsOf('topics', [
      f('partitionIndex', 'int32', '0+'),
      f('committedOffset', 'int64', '0+'),
      f('committedLeaderEpoch', 'int32', '2+', { default: -1 }),
      f('committedMetadata', 'string', '0+', { nullableVersions: '0+' }),
    ]),
  ]),
  response: message('TxnOffsetCommitResponse', '0-3', '3+', [throttleTimeMs(), topicsOf('topics', partitionResult())]),
};
