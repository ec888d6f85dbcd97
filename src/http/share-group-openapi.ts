/**
 * OpenAPI paths of the share group API (merged into openapi.ts): KIP-932's share groups as a queue
 * over HTTP (receive under a lock, acknowledge by offset), their description and configs. All are
 * extensions: REST Proxy has no share groups. The schemas are the routes' own (share-group-routes.ts).
 */
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { alterConfigsSchema } from './config-alter-body.js';
import { errors, inPath, jsonBody, ok } from './openapi-parts.js';
import {
  acknowledgeSchema,
  acknowledgementListSchema,
  configValueSchema,
  receivedListSchema,
  receiveSchema,
  shareGroupConfigListSchema,
  shareGroupListSchema,
  groupListSchema,
  groupsQuerySchema,
  shareGroupSchema,
  shareOffsetChangeListSchema,
  shareOffsetDeleteListSchema,
  shareOffsetsDeleteSchema,
  shareResetSchema,
} from './share-group-routes.js';

const group = inPath('cluster_id', 'share_group_id');
const config = inPath('cluster_id', 'share_group_id', 'name');
const BASE = '/v3/clusters/{cluster_id}/share-groups';

export const shareGroupPaths: ZodOpenApiPathsObject = {
  '/v3/clusters/{cluster_id}/groups': {
    get: {
      summary:
        "Kafka's ListGroups: consumer groups (CLASSIC, CONSUMER) and share groups (SHARE) side by side, with their type and state",
      'x-extension': true,
      requestParams: { path: inPath('cluster_id'), query: groupsQuerySchema },
      responses: { 200: ok(groupListSchema), ...errors(400, 403) },
    },
  },
  [BASE]: {
    get: {
      summary: 'Share groups (KIP-932)',
      'x-extension': true,
      requestParams: { path: inPath('cluster_id') },
      responses: { 200: ok(shareGroupListSchema), ...errors(403) },
    },
  },
  [`${BASE}/{share_group_id}`]: {
    get: {
      summary: "A share group's share-partitions: SPSO, SPEO, in-flight records by state, lag",
      'x-extension': true,
      requestParams: { path: group },
      responses: { 200: ok(shareGroupSchema), ...errors(403, 404) },
    },
    delete: {
      summary:
        "DeleteGroups of a share group (Admin.deleteShareGroups): the group and its share-partitions' state (SPSO, in-flight records) go, so a group of the name starts again by share.auto.offset.reset; refused (NON_EMPTY_GROUP) while members or unexpired locks remain",
      'x-extension': true,
      requestParams: { path: group },
      responses: { 204: { description: 'Deleted' }, ...errors(403, 404, 409) },
    },
  },
  [`${BASE}/{share_group_id}/records:receive`]: {
    post: {
      summary:
        "Receive up to max_records records of the topics, each locked for the group's share.record.lock.duration.ms; no membership is needed",
      'x-extension': true,
      requestParams: { path: group },
      requestBody: jsonBody(receiveSchema),
      responses: { 200: ok(receivedListSchema), ...errors(400, 403, 404) },
    },
  },
  [`${BASE}/{share_group_id}/records:acknowledge`]: {
    post: {
      summary:
        'Acknowledge records the member holds: accept (done), release (deliver again), reject (never again) or renew (extend the lock), each offset answered on its own (INVALID_RECORD_STATE: not held by this member)',
      'x-extension': true,
      requestParams: { path: group },
      requestBody: jsonBody(acknowledgeSchema),
      responses: { 200: ok(acknowledgementListSchema), ...errors(400, 403, 404) },
    },
  },
  [`${BASE}/{share_group_id}/offsets:reset`]: {
    post: {
      summary:
        "AlterShareGroupOffsets (kafka-share-groups.sh --reset-offsets): each share-partition in scope starts afresh at the strategy's offset, its in-flight records forgotten; refused (NON_EMPTY_GROUP) while members or unexpired locks remain",
      'x-extension': true,
      requestParams: { path: group },
      requestBody: jsonBody(shareResetSchema),
      responses: { 200: ok(shareOffsetChangeListSchema), ...errors(400, 403, 404, 409) },
    },
  },
  [`${BASE}/{share_group_id}/offsets:delete`]: {
    post: {
      summary:
        "DeleteShareGroupOffsets: the group's state for the topics is removed (they start again by share.auto.offset.reset); refused (NON_EMPTY_GROUP) while members or unexpired locks remain",
      'x-extension': true,
      requestParams: { path: group },
      requestBody: jsonBody(shareOffsetsDeleteSchema),
      responses: { 200: ok(shareOffsetDeleteListSchema), ...errors(400, 403, 404, 409) },
    },
  },
  [`${BASE}/{share_group_id}/configs`]: {
    get: {
      summary: "A share group's configs, overrides marked",
      'x-extension': true,
      requestParams: { path: group },
      responses: { 200: ok(shareGroupConfigListSchema), ...errors(403) },
    },
  },
  [`${BASE}/{share_group_id}/configs:alter`]: {
    post: {
      summary:
        "Set (SET, with a value) or reset (DELETE) several of a share group's configs: all are stored or none; validate_only checks them and stores nothing",
      'x-extension': true,
      requestParams: { path: group },
      requestBody: jsonBody(alterConfigsSchema),
      responses: { 204: { description: 'Altered' }, ...errors(400, 403) },
    },
  },
  [`${BASE}/{share_group_id}/configs/{name}`]: {
    put: {
      summary:
        'Set a share group config (share.auto.offset.reset: earliest, latest or by_duration:PnDTnHnMn.nS; share.record.lock.duration.ms; share.delivery.count.limit)',
      'x-extension': true,
      requestParams: { path: config },
      requestBody: jsonBody(configValueSchema),
      responses: { 204: { description: 'Set' }, ...errors(400, 403, 404) },
    },
    delete: {
      summary: 'Reset a share group config to its default',
      'x-extension': true,
      requestParams: { path: config },
      responses: { 204: { description: 'Reset' }, ...errors(403, 404) },
    },
  },
};
