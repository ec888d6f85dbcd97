/**
 * DescribeAcls, CreateAcls and DeleteAcls, in the versions Kafka 4.0 speaks (1-3; v0 was removed by
 * KIP-896). From v1 a resource pattern carries its pattern type (LITERAL 3 by default).
 */
import { arrayOf, f, message, type ApiSpec, type Field } from '../schema.js';
import { errorCode, errorMessage, nullableString, throttleTimeMs } from './fragments.js';

/** An ACL entry's own fields: principal, host, operation, permission. */
const aclEntry = (): Field[] => [
  f('principal', 'string', '0+'),
  f('host', 'string', '0+'),
  f('operation', 'int8', '0+'),
  f('permissionType', 'int8', '0+'),
];

/** An ACL filter, as DescribeAcls asks and each of DeleteAcls's filters. */
const aclFilter = (): Field[] => [
  f('resourceTypeFilter', 'int8', '0+'),
  nullableString('resourceNameFilter', '0+'),
  f('patternTypeFilter', 'int8', '1+', { default: 3 }),
  nullableString('principalFilter', '0+'),
  nullableString('hostFilter', '0+'),
  f('operation', 'int8', '0+'),
  f('permissionType', 'int8', '0+'),
];

export const DescribeAcls: ApiSpec = {
  apiKey: 29,
  name: 'DescribeAcls',
  request: message('DescribeAclsRequest', '1-3', '2+', aclFilter()),
  response: message('DescribeAclsResponse', '1-3', '2+', [
    throttleTimeMs(),
    errorCode(),
    errorMessage(),
    f(
      'resources',
      arrayOf([
        f('resourceType', 'int8', '0+'),
        f('resourceName', 'string', '0+'),
        f('patternType', 'int8', '1+', { default: 3 }),
        f('acls', arrayOf(aclEntry()), '0+'),
      ]),
      '0+',
    ),
  ]),
};

export const CreateAcls: ApiSpec = {
  apiKey: 30,
  name: 'CreateAcls',
  request: message('CreateAclsRequest', '1-3', '2+', [
    f(
      'creations',
      arrayOf([
        f('resourceType', 'int8', '0+'),
        f('resourceName', 'string', '0+'),
        f('resourcePatternType', 'int8', '1+', { default: 3 }),
        ...aclEntry(),
      ]),
      '0+',
    ),
  ]),
  response: message('CreateAclsResponse', '1-3', '2+', [
    throttleTimeMs(),
    f('results', arrayOf([errorCode(), errorMessage()]), '0+'),
  ]),
};

export const DeleteAcls: ApiSpec = {
  apiKey: 31,
  name: 'DeleteAcls',
  request: message('DeleteAclsRequest', '1-3', '2+', [f('filters', arrayOf(aclFilter()), '0+')]),
  response: message('DeleteAclsResponse', '1-3', '2+', [
    throttleTimeMs(),
    f(
      'filterResults',
      arrayOf([
        errorCode(),
        errorMessage(),
        f(
          'matchingAcls',
          arrayOf([
            errorCode(),
            errorMessage(),
            f('resourceType', 'int8', '0+'),
            f('resourceName', 'string', '0+'),
            f('patternType', 'int8', '1+', { default: 3 }),
            ...aclEntry(),
          ]),
          '0+',
        ),
      ]),
      '0+',
    ),
  ]),
};
