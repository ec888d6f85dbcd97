/**
 * OpenAPI paths of triggers (an extension: docs/triggers.md), merged into openapi.ts. The schemas
 * are the routes' own (trigger-routes.ts).
 */
import * as z from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { errors, inPath, jsonBody, ok } from './openapi-parts.js';
import { createTriggerSchema, triggerDescriptionSchema, triggerListSchema, triggerSchema } from './trigger-routes.js';

const named = z.object({ cluster_id: z.string(), trigger_name: z.string() });

const stateChange = (summary: string) => ({
  post: {
    summary,
    'x-extension': true,
    requestParams: { path: named },
    responses: { 200: ok(triggerSchema), ...errors(400, 403, 404) },
  },
});

export const triggerPaths: ZodOpenApiPathsObject = {
  '/v3/clusters/{cluster_id}/triggers': {
    get: {
      summary: 'The triggers (DESCRIBE on the cluster)',
      'x-extension': true,
      requestParams: { path: inPath('cluster_id') },
      responses: { 200: ok(triggerListSchema), ...errors(403) },
    },
    post: {
      summary:
        'Creates a trigger: the topic delivered to the target as its own consumer group (ALTER on the cluster, READ on the topic and the group)',
      'x-extension': true,
      requestParams: { path: inPath('cluster_id') },
      requestBody: jsonBody(createTriggerSchema),
      responses: { 201: ok(triggerSchema, 'Created'), ...errors(400, 403, 404) },
    },
  },
  '/v3/clusters/{cluster_id}/triggers/{trigger_name}': {
    get: {
      summary: 'A trigger with the position and lag of each partition (DESCRIBE on the cluster)',
      'x-extension': true,
      requestParams: { path: named },
      responses: { 200: ok(triggerDescriptionSchema), ...errors(400, 403, 404) },
    },
    delete: {
      summary: 'Deletes a trigger; its consumer group and offsets stay (ALTER on the cluster)',
      'x-extension': true,
      requestParams: { path: named },
      responses: { 204: { description: 'Deleted' }, ...errors(400, 403, 404) },
    },
  },
  '/v3/clusters/{cluster_id}/triggers/{trigger_name}/pause': stateChange(
    'Pauses a trigger: deliveries stop after the batch in flight (ALTER on the cluster)',
  ),
  '/v3/clusters/{cluster_id}/triggers/{trigger_name}/resume': stateChange(
    'Resumes a trigger: what came while paused is delivered at once (ALTER on the cluster)',
  ),
};
