/**
 * OpenAPI paths of the consumer-group API (merged into openapi.ts): Confluent v3's consumer-group
 * paths, v3-style extensions (`x-extension: true`) and REST Proxy v2's consumer instances. The
 * schemas are the routes' own (group-routes.ts, group-resources.ts, consumer-instance-routes.ts).
 */
import * as z from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import {
  assignmentsSchema,
  commitSchema as v2CommitSchema,
  committedQuerySchema,
  committedSchema,
  createdSchema,
  createSchema,
  partitionsSchema,
  polledSchema,
  recordsQuerySchema,
  seekSchema,
  subscribeSchema,
  subscriptionSchema,
} from './consumer-instance-routes.js';
import { groupDescriptionSchema, heartbeatAnswerSchema, offsetSchema, resetPlanSchema } from './group-resources.js';
import { commitSchema, heartbeatSchema, offsetsQuerySchema, resetSchema } from './group-routes.js';
import { errors, inPath, jsonBody, list, listMetadata, noContent, ok } from './openapi-parts.js';

const group = inPath('cluster_id', 'consumer_group_id');
const consumer = inPath('cluster_id', 'consumer_group_id', 'consumer_id');
const v2 = inPath('group_name', 'instance');
const object = z.looseObject({ kind: z.string() });

const g = '/v3/clusters/{cluster_id}/consumer-groups';
const i = '/consumers/{group_name}/instances/{instance}';

export const groupPaths: ZodOpenApiPathsObject = {
  [g]: {
    get: {
      summary: 'List consumer groups',
      requestParams: { path: inPath('cluster_id') },
      responses: { 200: list, ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}`]: {
    get: {
      summary: 'Describe a group: state, members, assignment, committed offset, HW and lag per partition',
      requestParams: { path: group },
      responses: { 200: ok(groupDescriptionSchema), ...errors(404) },
    },
    delete: {
      summary: 'Delete an Empty group and its offsets',
      'x-extension': true,
      requestParams: { path: group },
      responses: { ...noContent, ...errors(404, 409) },
    },
  },
  [`${g}/{consumer_group_id}/consumers:heartbeat`]: {
    post: {
      summary: 'Join, heartbeat or leave (KIP-848 ConsumerGroupHeartbeat; the server assigns partitions)',
      'x-extension': true,
      requestParams: { path: group },
      requestBody: jsonBody(heartbeatSchema),
      responses: { 200: ok(heartbeatAnswerSchema), ...errors(400, 404, 409, 503) },
    },
  },
  [`${g}/{consumer_group_id}/consumers`]: {
    get: { summary: 'List members', requestParams: { path: group }, responses: { 200: list, ...errors(404) } },
  },
  [`${g}/{consumer_group_id}/consumers/{consumer_id}`]: {
    get: {
      summary: 'Describe a member',
      requestParams: { path: consumer },
      responses: { 200: ok(object), ...errors(404) },
    },
    delete: {
      summary: 'Leave the group',
      'x-extension': true,
      requestParams: { path: consumer },
      responses: { ...noContent, ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/consumers/{consumer_id}/assignments`]: {
    get: {
      summary: "A member's assigned partitions",
      requestParams: { path: consumer },
      responses: { 200: list, ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}`]: {
    get: {
      summary: 'One assignment',
      requestParams: {
        path: inPath('cluster_id', 'consumer_group_id', 'consumer_id', 'topic_name', 'partition_id'),
      },
      responses: { 200: ok(object), ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/lags`]: {
    get: {
      summary: 'Lag of every partition with a committed offset',
      requestParams: { path: group },
      responses: { 200: list, ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/lags/{topic_name}/partitions/{partition_id}`]: {
    get: {
      summary:
        'Lag of one partition with a committed offset or an assigned member (without a committed offset, current_offset and lag are null)',
      requestParams: { path: inPath('cluster_id', 'consumer_group_id', 'topic_name', 'partition_id') },
      responses: { 200: ok(object), ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/lag-summary`]: {
    get: {
      summary: 'Max and total lag',
      requestParams: { path: group },
      responses: { 200: ok(object), ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/offsets`]: {
    get: {
      summary:
        'Committed offsets; with auto_offset_reset, the position a consumer starts from on every partition of topic_name (in pages of partitions: metadata.next)',
      'x-extension': true,
      requestParams: { path: group, query: offsetsQuerySchema },
      responses: {
        200: ok(
          z.object({
            kind: z.literal('KafkaConsumerGroupOffsetList'),
            metadata: listMetadata,
            data: z.array(offsetSchema),
          }),
        ),
        ...errors(400, 404, 409, 416),
      },
    },
  },
  [`${g}/{consumer_group_id}/offsets/{topic_name}/partitions/{partition_id}`]: {
    get: {
      summary: "One partition's committed offset (the self of a KafkaConsumerGroupOffset)",
      'x-extension': true,
      requestParams: { path: inPath('cluster_id', 'consumer_group_id', 'topic_name', 'partition_id') },
      responses: { 200: ok(offsetSchema), ...errors(404) },
    },
  },
  [`${g}/{consumer_group_id}/offsets:commit`]: {
    post: {
      summary:
        'Commit offsets: by a member of the current generation, or without member_id for a group without members',
      'x-extension': true,
      requestParams: { path: group },
      requestBody: jsonBody(commitSchema),
      responses: { 200: ok(object), ...errors(400, 404, 409) },
    },
  },
  [`${g}/{consumer_group_id}/offsets:reset`]: {
    post: {
      summary: 'Reset offsets of an inactive group as kafka-consumer-groups.sh --reset-offsets does',
      'x-extension': true,
      requestParams: { path: group },
      requestBody: jsonBody(resetSchema),
      responses: { 200: ok(resetPlanSchema), ...errors(400, 404, 409) },
    },
  },
  '/consumers/{group_name}': {
    post: {
      summary: 'REST Proxy v2: create a consumer instance (a group member living in the metadata store)',
      requestParams: { path: inPath('group_name') },
      requestBody: jsonBody(createSchema, false),
      responses: { 200: ok(createdSchema), ...errors(400, 409) },
    },
  },
  [i]: {
    delete: {
      summary: 'Delete the instance (commits with auto-commit, leaves the group)',
      requestParams: { path: v2 },
      responses: { ...noContent, ...errors(404) },
    },
  },
  [`${i}/subscription`]: {
    post: {
      summary: 'Subscribe',
      requestParams: { path: v2 },
      requestBody: jsonBody(subscribeSchema),
      responses: { ...noContent, ...errors(400, 404) },
    },
    get: {
      summary: 'Subscribed topics',
      requestParams: { path: v2 },
      responses: { 200: ok(subscriptionSchema), ...errors(404) },
    },
    delete: { summary: 'Unsubscribe', requestParams: { path: v2 }, responses: { ...noContent, ...errors(404) } },
  },
  [`${i}/assignments`]: {
    get: {
      summary: 'Assigned partitions',
      requestParams: { path: v2 },
      responses: { 200: ok(assignmentsSchema), ...errors(404) },
    },
  },
  [`${i}/records`]: {
    get: {
      summary: 'Poll records (long poll up to timeout ms)',
      requestParams: { path: v2, query: recordsQuerySchema },
      responses: { 200: ok(polledSchema), ...errors(404, 416) },
    },
  },
  [`${i}/offsets`]: {
    post: {
      summary: 'Commit offsets (each offset + 1, as REST Proxy does); no body commits every position',
      requestParams: { path: v2 },
      requestBody: jsonBody(v2CommitSchema, false),
      responses: { 200: { description: 'Committed' }, ...errors(400, 404, 409) },
    },
    get: {
      summary: 'Committed offsets of partitions (GET body {partitions}, or ?topic=&partition= pairs)',
      requestParams: { path: v2, query: committedQuerySchema },
      responses: { 200: ok(committedSchema), ...errors(404) },
    },
  },
  [`${i}/positions`]: {
    post: {
      summary: 'Seek to offsets',
      requestParams: { path: v2 },
      requestBody: jsonBody(seekSchema),
      responses: { ...noContent, ...errors(400, 404) },
    },
  },
  ...Object.fromEntries(
    (['beginning', 'end'] as const).map((to) => [
      `${i}/positions/${to}`,
      {
        post: {
          summary: `Seek to the ${to}`,
          requestParams: { path: v2 },
          requestBody: jsonBody(partitionsSchema, false),
          responses: { ...noContent, ...errors(400, 404) },
        },
      },
    ]),
  ),
};
