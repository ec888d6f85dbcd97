/** DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), version 0 as Kafka speaks it. */
import { arrayOf, f, message, type ApiSpec } from '../schema.js';
import { errorCode, errorMessage, throttleThenError, throttleTimeMs } from './fragments.js';

export const DescribeUserScramCredentials: ApiSpec = {
  apiKey: 50,
  name: 'DescribeUserScramCredentials',
  request: message('DescribeUserScramCredentialsRequest', '0', '0+', [
    f('users', arrayOf([f('name', 'string', '0+')]), '0+', { nullableVersions: '0+' }),
  ]),
  response: message('DescribeUserScramCredentialsResponse', '0', '0+', [
    ...throttleThenError(),
    errorMessage(),
    f(
      'results',
      arrayOf([
        f('user', 'string', '0+'),
        errorCode(),
        errorMessage(),
        f('credentialInfos', arrayOf([f('mechanism', 'int8', '0+'), f('iterations', 'int32', '0+')]), '0+'),
      ]),
      '0+',
    ),
  ]),
};

export const AlterUserScramCredentials: ApiSpec = {
  apiKey: 51,
  name: 'AlterUserScramCredentials',
  request: message('AlterUserScramCredentialsRequest', '0', '0+', [
    f('deletions', arrayOf([f('name', 'string', '0+'), f('mechanism', 'int8', '0+')]), '0+'),
    f(
      'upsertions',
      arrayOf([
        f('name', 'string', '0+'),
        f('mechanism', 'int8', '0+'),
        f('iterations', 'int32', '0+'),
        f('salt', 'bytes', '0+'),
        f('saltedPassword', 'bytes', '0+'),
      ]),
      '0+',
    ),
  ]),
  response: message('AlterUserScramCredentialsResponse', '0', '0+', [
    throttleTimeMs(),
    f('results', arrayOf([f('user', 'string', '0+'), errorCode(), errorMessage()]), '0+'),
  ]),
};
