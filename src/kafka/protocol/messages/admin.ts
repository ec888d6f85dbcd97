/** Topic administration: CreateTopics, DeleteTopics, CreatePartitions and the config APIs. */
import { arrayOf, f, message, type ApiSpec } from '../schema.js';
import { configEntry, configResource, errorCode, errorMessage, namedResult, throttleTimeMs } from './fragments.js';

/** A config resource's result: error code and message, then the resource. */
const alterResult = [errorCode(), errorMessage(), ...configResource];

export const CreateTopics: ApiSpec = {
  apiKey: 19,
  name: 'CreateTopics',
  request: message('CreateTopicsRequest', '0-5', '5+', [
    f(
      'topics',
      arrayOf([
        f('name', 'string', '0+'),
        f('numPartitions', 'int32', '0+'),
        f('replicationFactor', 'int16', '0+'),
        f('assignments', arrayOf([f('partitionIndex', 'int32', '0+'), f('brokerIds', arrayOf('int32'), '0+')]), '0+'),
        f('configs', arrayOf(configEntry()), '0+'),
      ]),
      '0+',
    ),
    f('timeoutMs', 'int32', '0+', { default: 60000 }),
    f('validateOnly', 'bool', '1+'),
  ]),
  response: message('CreateTopicsResponse', '0-5', '5+', [
    throttleTimeMs('2+'),
    f(
      'topics',
      arrayOf([
        ...namedResult('name', '1+'),
        f('topicConfigErrorCode', 'int16', '5+', { tag: 0, taggedVersions: '5+' }),
        f('numPartitions', 'int32', '5+', { default: -1 }),
        f('replicationFactor', 'int16', '5+', { default: -1 }),
        f(
          'configs',
          arrayOf([
            ...configEntry('5+'),
            f('readOnly', 'bool', '5+'),
            f('configSource', 'int8', '5+', { default: -1 }),
            f('isSensitive', 'bool', '5+'),
          ]),
          '5+',
          { nullableVersions: '5+', default: null },
        ),
      ]),
      '0+',
    ),
  ]),
};

export const DeleteTopics: ApiSpec = {
  apiKey: 20,
  name: 'DeleteTopics',
  request: message('DeleteTopicsRequest', '0-4', '4+', [
    f('topicNames', arrayOf('string'), '0+'),
    f('timeoutMs', 'int32', '0+'),
  ]),
  response: message('DeleteTopicsResponse', '0-4', '4+', [
    throttleTimeMs('1+'),
    f('responses', arrayOf(namedResult('name')), '0+'),
  ]),
};

export const CreatePartitions: ApiSpec = {
  apiKey: 37,
  name: 'CreatePartitions',
  request: message('CreatePartitionsRequest', '0-2', '2+', [
    f(
      'topics',
      arrayOf([
        f('name', 'string', '0+'),
        f('count', 'int32', '0+'),
        f('assignments', arrayOf([f('brokerIds', arrayOf('int32'), '0+')]), '0+', { nullableVersions: '0+' }),
      ]),
      '0+',
    ),
    f('timeoutMs', 'int32', '0+'),
    f('validateOnly', 'bool', '0+'),
  ]),
  response: message('CreatePartitionsResponse', '0-2', '2+', [
    throttleTimeMs(),
    f('results', arrayOf(namedResult('name', '0+')), '0+'),
  ]),
};

export const DescribeConfigs: ApiSpec = {
  apiKey: 32,
  name: 'DescribeConfigs',
  request: message('DescribeConfigsRequest', '0-2', 'none', [
    f(
      'resources',
      arrayOf([...configResource, f('configurationKeys', arrayOf('string'), '0+', { nullableVersions: '0+' })]),
      '0+',
    ),
    f('includeSynonyms', 'bool', '1+'),
  ]),
  response: message('DescribeConfigsResponse', '0-2', 'none', [
    throttleTimeMs(),
    f(
      'results',
      arrayOf([
        ...alterResult,
        f(
          'configs',
          arrayOf([
            ...configEntry(),
            f('readOnly', 'bool', '0+'),
            f('isDefault', 'bool', '0'),
            f('configSource', 'int8', '1+', { default: -1 }),
            f('isSensitive', 'bool', '0+'),
            f('synonyms', arrayOf([...configEntry('1+', '0+'), f('source', 'int8', '1+')]), '1+'),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
  ]),
};

export const AlterConfigs: ApiSpec = {
  apiKey: 33,
  name: 'AlterConfigs',
  request: message('AlterConfigsRequest', '0-2', '2+', [
    f('resources', arrayOf([...configResource, f('configs', arrayOf(configEntry()), '0+')]), '0+'),
    f('validateOnly', 'bool', '0+'),
  ]),
  response: message('AlterConfigsResponse', '0-2', '2+', [
    throttleTimeMs(),
    f('responses', arrayOf(alterResult), '0+'),
  ]),
};

export const IncrementalAlterConfigs: ApiSpec = {
  apiKey: 44,
  name: 'IncrementalAlterConfigs',
  request: message('IncrementalAlterConfigsRequest', '0-1', '1+', [
    f(
      'resources',
      arrayOf([
        ...configResource,
        f(
          'configs',
          arrayOf([
            f('name', 'string', '0+'),
            f('configOperation', 'int8', '0+'),
            f('value', 'string', '0+', { nullableVersions: '0+' }),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
    f('validateOnly', 'bool', '0+'),
  ]),
  response: message('IncrementalAlterConfigsResponse', '0-1', '1+', [
    throttleTimeMs(),
    f('responses', arrayOf(alterResult), '0+'),
  ]),
};
