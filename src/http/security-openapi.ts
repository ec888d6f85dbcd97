/**
 * OpenAPI paths of the ACL admin (Confluent v3's /acls paths and shapes), of client quotas and of
 * SCRAM credentials (extensions), merged into openapi.ts. The schemas are the routes' own
 * (acl-routes.ts, quota-routes.ts, scram-routes.ts).
 */
import * as z from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { aclFilterSchema, aclSchema, batchSchema, createAclSchema } from './acl-routes.js';
import { errors, inPath, jsonBody, listMetadata, ok } from './openapi-parts.js';
import { alterSchema as alterQuotasSchema, quotaListSchema, quotaQuerySchema } from './quota-routes.js';
import {
  alterResultSchema,
  alterSchema as alterScramSchema,
  scramListSchema,
  scramQuerySchema,
} from './scram-routes.js';

const cluster = inPath('cluster_id');

export const securityPaths: ZodOpenApiPathsObject = {
  '/v3/clusters/{cluster_id}/acls': {
    get: {
      summary: "List ACLs (Kafka's DescribeAcls; DESCRIBE on the cluster)",
      requestParams: { path: cluster, query: aclFilterSchema },
      responses: {
        200: ok(z.object({ kind: z.literal('KafkaAclList'), metadata: listMetadata, data: z.array(aclSchema) })),
        ...errors(400, 403),
      },
    },
    post: {
      summary: 'Create an ACL (ALTER on the cluster)',
      requestParams: { path: cluster },
      requestBody: jsonBody(createAclSchema),
      responses: { 201: { description: 'Created' }, ...errors(400, 403) },
    },
    delete: {
      summary: 'Delete the ACLs a filter matches (resource_type required; ANY matches all)',
      requestParams: { path: cluster, query: aclFilterSchema },
      responses: { 200: ok(z.object({ data: z.array(aclSchema) })), ...errors(400, 403) },
    },
  },
  '/v3/clusters/{cluster_id}/acls:batch': {
    post: {
      summary: 'Create several ACLs, all or nothing',
      requestParams: { path: cluster },
      requestBody: jsonBody(batchSchema),
      responses: { 201: { description: 'Created' }, ...errors(400, 403) },
    },
  },
  '/v3/clusters/{cluster_id}/client-quotas': {
    get: {
      summary: "Kafka's DescribeClientQuotas (DESCRIBE_CONFIGS on the cluster)",
      'x-extension': true,
      requestParams: { path: cluster, query: quotaQuerySchema },
      responses: { 200: ok(quotaListSchema), ...errors(403) },
    },
  },
  '/v3/clusters/{cluster_id}/user-scram-credentials': {
    get: {
      summary: "Kafka's DescribeUserScramCredentials (DESCRIBE on the cluster): mechanisms and iterations per user",
      'x-extension': true,
      requestParams: { path: cluster, query: scramQuerySchema },
      responses: { 200: ok(scramListSchema), ...errors(403) },
    },
  },
  '/v3/clusters/{cluster_id}/user-scram-credentials:alter': {
    post: {
      summary:
        "Kafka's AlterUserScramCredentials (ALTER on the cluster): the salt and salted password, never the password; answered per user",
      'x-extension': true,
      requestParams: { path: cluster },
      requestBody: jsonBody(alterScramSchema),
      responses: { 200: ok(alterResultSchema), ...errors(400, 403) },
    },
  },
  '/v3/clusters/{cluster_id}/client-quotas:alter': {
    post: {
      summary:
        "Kafka's AlterClientQuotas (ALTER_CONFIGS on the cluster): set or remove keys per entity, all checked before any applies",
      'x-extension': true,
      requestParams: { path: cluster },
      requestBody: jsonBody(alterQuotasSchema),
      responses: { 204: { description: 'Altered' }, ...errors(400, 403) },
    },
  },
};
