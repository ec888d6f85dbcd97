/** ApiVersions, Metadata, DescribeCluster and the SASL handshake. */
import { arrayOf, f, message, type ApiSpec } from '../schema.js';
import { errorCode, errorMessage, nullableString, throttleThenError, throttleTimeMs } from './fragments.js';

/** A broker's id, host, port and rack (nullable from `rackVersions`). */
const broker = (idField: string, rackVersions: string) => [
  f(idField, 'int32', '0+'),
  f('host', 'string', '0+'),
  f('port', 'int32', '0+'),
  nullableString('rack', rackVersions),
];

export const ApiVersions: ApiSpec = {
  apiKey: 18,
  name: 'ApiVersions',
  request: message('ApiVersionsRequest', '0-3', '3+', [
    f('clientSoftwareName', 'string', '3+'),
    f('clientSoftwareVersion', 'string', '3+'),
  ]),
  response: message('ApiVersionsResponse', '0-3', '3+', [
    f('errorCode', 'int16', '0+'),
    f(
      'apiKeys',
      arrayOf([f('apiKey', 'int16', '0+'), f('minVersion', 'int16', '0+'), f('maxVersion', 'int16', '0+')]),
      '0+',
    ),
    f('throttleTimeMs', 'int32', '1+'),
    f(
      'supportedFeatures',
      arrayOf([f('name', 'string', '3+'), f('minVersion', 'int16', '3+'), f('maxVersion', 'int16', '3+')]),
      '3+',
      { tag: 0, taggedVersions: '3+' },
    ),
    f('finalizedFeaturesEpoch', 'int64', '3+', { tag: 1, taggedVersions: '3+', default: -1 }),
    f(
      'finalizedFeatures',
      arrayOf([f('name', 'string', '3+'), f('maxVersionLevel', 'int16', '3+'), f('minVersionLevel', 'int16', '3+')]),
      '3+',
      { tag: 2, taggedVersions: '3+' },
    ),
  ]),
};

export const Metadata: ApiSpec = {
  apiKey: 3,
  name: 'Metadata',
  request: message('MetadataRequest', '0-12', '9+', [
    f('topics', arrayOf([f('topicId', 'uuid', '10+'), f('name', 'string', '0+', { nullableVersions: '10+' })]), '0+', {
      nullableVersions: '1+',
    }),
    f('allowAutoTopicCreation', 'bool', '4+', { default: true }),
    f('includeClusterAuthorizedOperations', 'bool', '8-10'),
    f('includeTopicAuthorizedOperations', 'bool', '8+'),
  ]),
  response: message('MetadataResponse', '0-12', '9+', [
    throttleTimeMs('3+'),
    f('brokers', arrayOf(broker('nodeId', '1+')), '0+'),
    nullableString('clusterId', '2+'),
    f('controllerId', 'int32', '1+', { default: -1 }),
    f(
      'topics',
      arrayOf([
        errorCode(),
        f('name', 'string', '0+', { nullableVersions: '12+' }),
        f('topicId', 'uuid', '10+'),
        f('isInternal', 'bool', '1+'),
        f(
          'partitions',
          arrayOf([
            errorCode(),
            f('partitionIndex', 'int32', '0+'),
            f('leaderId', 'int32', '0+'),
            f('leaderEpoch', 'int32', '7+', { default: -1 }),
            f('replicaNodes', arrayOf('int32'), '0+'),
            f('isrNodes', arrayOf('int32'), '0+'),
            f('offlineReplicas', arrayOf('int32'), '5+'),
          ]),
          '0+',
        ),
        f('topicAuthorizedOperations', 'int32', '8+', { default: -2147483648 }),
      ]),
      '0+',
    ),
    f('clusterAuthorizedOperations', 'int32', '8-10', { default: -2147483648 }),
  ]),
};

export const DescribeCluster: ApiSpec = {
  apiKey: 60,
  name: 'DescribeCluster',
  request: message('DescribeClusterRequest', '0', '0+', [f('includeClusterAuthorizedOperations', 'bool', '0+')]),
  response: message('DescribeClusterResponse', '0', '0+', [
    ...throttleThenError(),
    errorMessage(),
    f('clusterId', 'string', '0+'),
    f('controllerId', 'int32', '0+', { default: -1 }),
    f('brokers', arrayOf(broker('brokerId', '0+')), '0+'),
    f('clusterAuthorizedOperations', 'int32', '0+', { default: -2147483648 }),
  ]),
};

export const SaslHandshake: ApiSpec = {
  apiKey: 17,
  name: 'SaslHandshake',
  request: message('SaslHandshakeRequest', '0-1', 'none', [f('mechanism', 'string', '0+')]),
  response: message('SaslHandshakeResponse', '0-1', 'none', [errorCode(), f('mechanisms', arrayOf('string'), '0+')]),
};

export const SaslAuthenticate: ApiSpec = {
  apiKey: 36,
  name: 'SaslAuthenticate',
  request: message('SaslAuthenticateRequest', '0-2', '2+', [f('authBytes', 'bytes', '0+')]),
  response: message('SaslAuthenticateResponse', '0-2', '2+', [
    errorCode(),
    errorMessage(),
    f('authBytes', 'bytes', '0+'),
    f('sessionLifetimeMs', 'int64', '1+'),
  ]),
};
