/**
 * OpenAPI paths of the cluster, its brokers, topics, topic configs, partitions and offsets, and the
 * feature level (merged into openapi.ts): Confluent v3's paths and shapes where v3 has them. Request
 * bodies are the routes' own schemas (topic-routes.ts, feature-routes.ts); the v3 resources
 * (resources.ts) are described by the fields a client needs, more may come.
 */
import * as z from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { featureLevelSchema, raiseSchema } from './feature-routes.js';
import {
  dateTime,
  described,
  errors,
  inPath,
  jsonBody,
  list,
  noContent,
  ok,
  related,
  resourceMetadata,
} from './openapi-parts.js';
import { pageTokenSchema } from './page-token.js';
import { alterConfigsSchema } from './config-alter-body.js';
import { createTopicSchema, offsetQuerySchema, patchTopicSchema, putConfigSchema } from './topic-routes.js';

const int = z.int();

/** A v3 resource: its kind, metadata and the fields given; any other field may come too. */
const resource = <K extends string>(kind: K, fields: z.ZodRawShape = {}) =>
  z.looseObject({ kind: z.literal(kind), metadata: resourceMetadata, ...fields });

const topicSchema = resource('KafkaTopic', {
  cluster_id: z.string(),
  topic_name: z.string(),
  partitions_count: int,
  replication_factor: int,
}).meta({ id: 'Topic' });

const partitionSchema = resource('KafkaPartition', {
  partition_id: int,
  leader_id: int,
  leader_epoch: int,
  replica_ids: z.array(int),
  isr: z.array(int),
  log_start_offset: int,
  high_watermark: int,
  last_stable_offset: described(int, 'The first offset of the oldest open transaction, else the high watermark'),
  log_end_offset: int,
  reassignment: related,
}).meta({ id: 'Partition' });

const configSchema = (kind: string) =>
  resource(kind, { name: z.string(), value: z.string().nullable(), is_default: z.boolean(), source: z.string() });

const createTopic = createTopicSchema
  .extend({
    replicas_assignments: described(
      createTopicSchema.shape.replicas_assignments,
      'Taken when it is the placement by store index (replica j of partition i on store (i + j) mod n), else INVALID_REPLICA_ASSIGNMENT; instead of partitions_count and replication_factor',
    ),
  })
  .meta({ id: 'CreateTopic' });

const pageToken = z.object({ page_token: pageTokenSchema });

const partitionOffsets = z.union([
  z.object({
    kind: z.literal('KafkaPartitionWithOffsets'),
    metadata: resourceMetadata,
    cluster_id: z.string(),
    topic_name: z.string(),
    partition_id: int,
    earliest_offset: described(int, 'The log start offset'),
    latest_offset: described(int, 'The high watermark'),
  }),
  z
    .object({
      kind: z.literal('KafkaPartitionOffset'),
      cluster_id: z.string(),
      topic_name: z.string(),
      partition_id: int,
      offset_type: offsetQuerySchema.shape.offset_type.unwrap().exclude(['earliest_and_latest']),
      offset: described(int, '-1 when no record is at or after the timestamp'),
      timestamp: dateTime.nullable(),
    })
    .meta({ description: 'Extension (offset_type earliest, latest or timestamp)' }),
]);

const cluster = inPath('cluster_id');
const topic = inPath('cluster_id', 'topic_name');
const partition = inPath('cluster_id', 'topic_name', 'partition_id');
const broker = inPath('cluster_id', 'broker_id');
const get = (summary: string, path: z.ZodObject, answer = list, statuses = [404]) => ({
  get: { summary, requestParams: { path }, responses: { 200: answer, ...errors(...statuses) } },
});

const t = '/v3/clusters/{cluster_id}/topics';

export const topicPaths: ZodOpenApiPathsObject = {
  '/health': { get: { summary: 'Liveness', responses: { 200: ok(z.object({ status: z.literal('ok') })) } } },
  '/v3/clusters': { get: { summary: 'List clusters', responses: { 200: list } } },
  '/v3/clusters/{cluster_id}': get(
    'Describe the cluster',
    cluster,
    ok(resource('KafkaCluster', { cluster_id: z.string(), acls: related, version: z.string() })),
  ),
  [t]: {
    get: { summary: 'List topics', requestParams: { path: cluster }, responses: { 200: list } },
    post: {
      summary: 'Create a topic',
      requestParams: { path: cluster },
      requestBody: jsonBody(createTopic),
      responses: {
        200: ok(topicSchema, 'validate_only: what would be created; nothing is'),
        201: ok(topicSchema, 'Created'),
        ...errors(400, 404, 415),
      },
    },
  },
  [`${t}/{topic_name}`]: {
    get: {
      summary: 'Describe a topic',
      requestParams: { path: topic },
      responses: { 200: ok(topicSchema), ...errors(404) },
    },
    patch: {
      summary: 'Grow the partition count',
      requestParams: { path: topic },
      requestBody: jsonBody(patchTopicSchema),
      responses: { 200: ok(topicSchema), ...errors(400, 404) },
    },
    delete: {
      summary: 'Delete a topic and its data',
      requestParams: { path: topic },
      responses: { ...noContent, ...errors(404) },
    },
  },
  [`${t}/-/configs`]: get("Every topic's configs", cluster),
  '/v3/clusters/{cluster_id}/brokers': get(
    'List brokers: one per replica store (broker i is store i; replica, leader and ISR ids are store indexes)',
    cluster,
  ),
  '/v3/clusters/{cluster_id}/brokers/{broker_id}': get(
    'Describe a broker (no host or port: every function serves every partition)',
    broker,
    ok(resource('KafkaBroker', { broker_id: int, host: z.null(), port: z.null() })),
  ),
  '/v3/clusters/{cluster_id}/brokers/{broker_id}/configs': get(
    "A broker's configs: the server's read-only defaults for new topics (num.partitions, default.replication.factor)",
    broker,
  ),
  '/v3/clusters/{cluster_id}/brokers/{broker_id}/configs/{name}': get(
    'Read one broker config',
    inPath('cluster_id', 'broker_id', 'name'),
    ok(configSchema('KafkaBrokerConfig')),
  ),
  '/v3/clusters/{cluster_id}/broker-configs': get('Every broker config of every broker', cluster),
  '/v3/clusters/{cluster_id}/brokers/{broker_id}/partition-replicas': {
    get: {
      summary: 'The partition replicas a broker (store) holds, in pages of partitions (metadata.next)',
      requestParams: { path: broker, query: pageToken },
      responses: { 200: list, ...errors(404) },
    },
  },
  [`${t}/{topic_name}/partitions/{partition_id}/replicas`]: get(
    "A partition's replicas, with leader and in-sync flags",
    partition,
  ),
  [`${t}/{topic_name}/partitions/{partition_id}/replicas/{broker_id}`]: get(
    'One replica of a partition',
    inPath('cluster_id', 'topic_name', 'partition_id', 'broker_id'),
    ok(resource('KafkaReplica', { broker_id: int, is_leader: z.boolean(), is_in_sync: z.boolean() })),
  ),
  [`${t}/-/partitions/-/reassignment`]: get(
    'Reassignments in progress: always none (replicas are placed when a partition is created)',
    cluster,
  ),
  [`${t}/{topic_name}/partitions/-/reassignment`]: get("A topic's reassignments in progress: always none", topic),
  [`${t}/{topic_name}/partitions/{partition_id}/reassignment`]: get(
    "A partition's reassignment: no replica is being added or removed, since replicas are placed when a partition is created",
    partition,
    ok(resource('KafkaReassignment', { adding_replicas: z.array(int), removing_replicas: z.array(int) })),
  ),
  [`${t}/{topic_name}/configs`]: get('List topic configs (Kafka names, defaults included)', topic),
  [`${t}/{topic_name}/configs:alter`]: {
    post: {
      summary: 'Set or delete several configs, all or nothing',
      requestParams: { path: topic },
      requestBody: jsonBody(alterConfigsSchema),
      responses: { ...noContent, ...errors(400, 404) },
    },
  },
  [`${t}/{topic_name}/configs/{name}`]: {
    ...get('Read one config', inPath('cluster_id', 'topic_name', 'name'), ok(configSchema('KafkaTopicConfig'))),
    put: {
      summary: 'Set one config',
      requestParams: { path: inPath('cluster_id', 'topic_name', 'name') },
      requestBody: jsonBody(putConfigSchema),
      responses: { ...noContent, ...errors(400, 404) },
    },
    delete: {
      summary: 'Reset one config to its default',
      requestParams: { path: inPath('cluster_id', 'topic_name', 'name') },
      responses: { ...noContent, ...errors(404) },
    },
  },
  [`${t}/{topic_name}/partitions`]: {
    get: {
      summary: 'List partitions with leader, ISR, HW, LEO, in pages (metadata.next)',
      requestParams: { path: topic, query: pageToken },
      responses: { 200: list, ...errors(404) },
    },
  },
  [`${t}/{topic_name}/partitions/{partition_id}`]: get('Describe a partition', partition, ok(partitionSchema)),
  [`${t}/{topic_name}/partitions/{partition_id}/offset`]: {
    get: {
      summary:
        "A partition's earliest and latest offsets (Confluent's default, offset_type=earliest_and_latest); as an extension, Kafka's ListOffsets for earliest, latest, or the first offset at or after a timestamp",
      requestParams: { path: partition, query: offsetQuerySchema },
      responses: { 200: ok(partitionOffsets), ...errors(400, 404) },
    },
  },
  '/v3/clusters/{cluster_id}/features': {
    get: {
      summary:
        "The cluster's feature level (as Kafka's metadata.version): the level in force, what this code and every registered process support, and the highest level that may be raised to now",
      'x-extension': true,
      requestParams: { path: cluster },
      responses: { 200: ok(featureLevelSchema), ...errors(403) },
    },
  },
  '/v3/clusters/{cluster_id}/features:raise': {
    post: {
      summary:
        'Raise the feature level (ALTER on the cluster); refused above what this code or any active process supports, and never lowered (docs/deploy.md "Upgrading and rolling back")',
      'x-extension': true,
      requestParams: { path: cluster },
      requestBody: jsonBody(raiseSchema),
      responses: { 200: ok(featureLevelSchema), ...errors(400, 403, 409) },
    },
  },
};
