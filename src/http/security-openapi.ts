/**
 * OpenAPI paths of the ACL admin (Confluent v3's /acls paths and shapes), of client quotas and of
 * SCRAM credentials (extensions), merged into openapi.ts.
 */
import { OPERATIONS, PATTERN_TYPES, PERMISSIONS, RESOURCE_TYPES } from '../authz/acl.js';
import { SCRAM_MECHANISMS } from '../authz/scram.js';

type Json = Record<string, unknown>;

const json = (schema: Json, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
const error = json({ $ref: '#/components/schemas/Error' }, 'Error');
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [String(s), error]));
const obj = (properties: Json, required?: string[]) => ({
  type: 'object',
  properties,
  ...(required ? { required } : {}),
});
const query = (name: string, schema: Json, description?: string) => ({
  name,
  in: 'query',
  required: false,
  schema,
  ...(description ? { description } : {}),
});
const body = (schema: Json) => ({ required: true, content: { 'application/json': { schema } } });
const cluster = { name: 'cluster_id', in: 'path', required: true, schema: { type: 'string' } };

// The ACL model's own value lists, so the document cannot drift from what the server accepts.
const resourceType = { enum: [...RESOURCE_TYPES] };
const patternType = { enum: [...PATTERN_TYPES] };
const operation = { enum: [...OPERATIONS] };
const permission = { enum: [...PERMISSIONS] };
const scramMechanism = { enum: [...SCRAM_MECHANISMS] };
/** A per-user failure: the error envelope of one user's entry. */
const userError = { $ref: '#/components/schemas/Error' };

const createAcl = obj(
  {
    resource_type: resourceType,
    resource_name: {
      type: 'string',
      description: "A topic, group or transactional id ('*': every one), or kafka-cluster",
    },
    pattern_type: { ...patternType, default: 'LITERAL' },
    principal: { type: 'string', description: 'Type:name, e.g. User:alice; User:* is everyone' },
    host: { type: 'string', default: '*' },
    operation,
    permission,
  },
  ['resource_type', 'resource_name', 'principal', 'operation', 'permission'],
);
const aclData = {
  type: 'object',
  properties: {
    kind: { const: 'KafkaAcl' },
    metadata: { type: 'object' },
    cluster_id: { type: 'string' },
    ...createAcl.properties,
  },
};
const aclList = obj({
  kind: { const: 'KafkaAclList' },
  metadata: { type: 'object' },
  data: { type: 'array', items: aclData },
});
const filter = [
  query('resource_type', { enum: [...resourceType.enum, 'ANY'] }),
  query('resource_name', { type: 'string' }),
  query(
    'pattern_type',
    { enum: [...patternType.enum, 'ANY', 'MATCH'] },
    'MATCH: every pattern that applies to resource_name (literal, * and prefixes)',
  ),
  query('principal', { type: 'string' }),
  query('host', { type: 'string' }),
  query('operation', { enum: [...operation.enum, 'ANY'] }),
  query('permission', { enum: [...permission.enum, 'ANY'] }),
];
const entity = {
  type: 'array',
  items: obj(
    {
      entity_type: { enum: ['user', 'client-id'] },
      entity_name: { type: ['string', 'null'], description: 'null: the default' },
    },
    ['entity_type', 'entity_name'],
  ),
};
const quotaValues = obj({
  producer_byte_rate: { type: 'number' },
  consumer_byte_rate: { type: 'number' },
  request_percentage: { type: 'number' },
});

export const securityPaths: Record<string, Json> = {
  '/v3/clusters/{cluster_id}/acls': {
    get: {
      summary: "List ACLs (Kafka's DescribeAcls; DESCRIBE on the cluster)",
      parameters: [cluster, ...filter],
      responses: { 200: json(aclList), ...errors(400, 403) },
    },
    post: {
      summary: 'Create an ACL (ALTER on the cluster)',
      parameters: [cluster],
      requestBody: body(createAcl),
      responses: { 201: { description: 'Created' }, ...errors(400, 403) },
    },
    delete: {
      summary: 'Delete the ACLs a filter matches (resource_type required; ANY matches all)',
      parameters: [cluster, ...filter],
      responses: { 200: json(obj({ data: { type: 'array', items: aclData } })), ...errors(400, 403) },
    },
  },
  '/v3/clusters/{cluster_id}/acls:batch': {
    post: {
      summary: 'Create several ACLs, all or nothing',
      parameters: [cluster],
      requestBody: body(obj({ data: { type: 'array', items: createAcl } }, ['data'])),
      responses: { 201: { description: 'Created' }, ...errors(400, 403) },
    },
  },
  '/v3/clusters/{cluster_id}/client-quotas': {
    get: {
      summary: "Kafka's DescribeClientQuotas (DESCRIBE_CONFIGS on the cluster)",
      'x-extension': true,
      parameters: [
        cluster,
        query('user', { type: 'string' }, '<default> for the default user; absent: any'),
        query('client_id', { type: 'string' }, '<default> for the default client id; absent: any'),
      ],
      responses: {
        200: json(
          obj({
            kind: { const: 'KafkaClientQuotaList' },
            data: { type: 'array', items: obj({ kind: { const: 'KafkaClientQuota' }, entity, values: quotaValues }) },
          }),
        ),
        ...errors(403),
      },
    },
  },
  '/v3/clusters/{cluster_id}/user-scram-credentials': {
    get: {
      summary: "Kafka's DescribeUserScramCredentials (DESCRIBE on the cluster): mechanisms and iterations per user",
      'x-extension': true,
      parameters: [
        cluster,
        {
          ...query('user', { type: 'array', items: { type: 'string' } }, 'repeat for several; absent: every user'),
          explode: true,
        },
      ],
      responses: {
        200: json(
          obj({
            kind: { const: 'KafkaUserScramCredentialList' },
            data: {
              type: 'array',
              items: obj(
                {
                  user: { type: 'string' },
                  credentials: {
                    type: 'array',
                    items: obj({ mechanism: scramMechanism, iterations: { type: 'integer' } }, [
                      'mechanism',
                      'iterations',
                    ]),
                  },
                  error: userError,
                },
                ['user', 'credentials'],
              ),
            },
          }),
        ),
        ...errors(403),
      },
    },
  },
  '/v3/clusters/{cluster_id}/user-scram-credentials:alter': {
    post: {
      summary:
        "Kafka's AlterUserScramCredentials (ALTER on the cluster): the salt and salted password, never the password; answered per user",
      'x-extension': true,
      parameters: [cluster],
      requestBody: body(
        obj({
          deletions: {
            type: 'array',
            items: obj({ user: { type: 'string' }, mechanism: scramMechanism }, ['user', 'mechanism']),
          },
          upsertions: {
            type: 'array',
            items: obj(
              {
                user: { type: 'string' },
                mechanism: scramMechanism,
                iterations: { type: 'integer', minimum: 4096, maximum: 16384 },
                salt: { type: 'string', contentEncoding: 'base64' },
                salted_password: {
                  type: 'string',
                  contentEncoding: 'base64',
                  description: "Hi(password, salt, iterations): PBKDF2 with the mechanism's HMAC",
                },
              },
              ['user', 'mechanism', 'iterations', 'salt', 'salted_password'],
            ),
          },
        }),
      ),
      responses: {
        200: json(
          obj({ data: { type: 'array', items: obj({ user: { type: 'string' }, error: userError }, ['user']) } }),
        ),
        ...errors(400, 403),
      },
    },
  },
  '/v3/clusters/{cluster_id}/client-quotas:alter': {
    post: {
      summary:
        "Kafka's AlterClientQuotas (ALTER_CONFIGS on the cluster): set or remove keys per entity, all checked before any applies",
      'x-extension': true,
      parameters: [cluster],
      requestBody: body(
        obj(
          {
            data: {
              type: 'array',
              items: obj(
                {
                  entity,
                  ops: {
                    type: 'array',
                    items: obj(
                      {
                        key: { enum: ['producer_byte_rate', 'consumer_byte_rate', 'request_percentage'] },
                        value: { type: 'number' },
                        remove: { type: 'boolean' },
                      },
                      ['key'],
                    ),
                  },
                },
                ['entity', 'ops'],
              ),
            },
            validate_only: { type: 'boolean' },
          },
          ['data'],
        ),
      ),
      responses: { 204: { description: 'Altered' }, ...errors(400, 403) },
    },
  },
};
