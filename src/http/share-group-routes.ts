import { randomUUID } from 'node:crypto';
import { Hono, type Context } from 'hono';
import * as z from 'zod';
import { ERRORS, KafkaError, type KafkaErrorName } from '../wire/errors.js';
import type { ShareGroupJson } from '../wire/share-group-json.js';
import { SHARE_GROUP_CONFIG_NAMES } from '../share/share-config.js';
import { shareWatchKey, type AcquiredRecord, type ShareAck } from '../share/share-groups.js';
import { partitionWatchKey } from '../timer/delayed-fetch.js';
import { RESET_STRATEGIES, resetFields, resetScope, resetStrategy } from './offset-reset-body.js';
import type { AppEnv } from './app-env.js';
import { alterConfigsSchema, configChanges } from './config-alter-body.js';
import {
  DATA_TYPES,
  isoTimestamps,
  jsonString,
  OUTPUT_FORMATS,
  showRecordText,
  type OutputFormat,
} from './record-text.js';
import { dateTime, type Holds, type Same, type WireBody } from './openapi-parts.js';
import { readJson } from './request.js';
import { allowed, allowedNames, authorize, authorizeAll } from './security.js';

/**
 * Share groups (KIP-932) as a queue over HTTP, in v3 style under the cluster (an extension: REST
 * Proxy has no share groups). A receiver needs no membership: it names itself (`member_id`, or
 * one is made for it) and acknowledges by offset what it was given.
 *
 *   POST /share-groups/{g}/records:receive       up to max_records records, each under a lock
 *   POST /share-groups/{g}/records:acknowledge   accept, release, reject or renew by offset, batched
 *   GET  /share-groups                           the share groups
 *   GET  /share-groups/{g}                       SPSO, SPEO, in-flight records and lag per partition
 *   GET  /share-groups/{g}/configs               share.* configs of the group
 *   POST /share-groups/{g}/configs:alter         set or reset several, all or none
 *   PUT|DELETE /share-groups/{g}/configs/{name}  set or reset one
 *   POST /share-groups/{g}/offsets:reset         AlterShareGroupOffsets by a strategy (or a dry run)
 *   POST /share-groups/{g}/offsets:delete        DeleteShareGroupOffsets of topics
 *
 * Authorization as Kafka's ShareFetch/ShareAcknowledge: READ on the group and on each topic;
 * DESCRIBE on the group to describe it, DESCRIBE_CONFIGS / ALTER_CONFIGS on it for its configs.
 */

export const SHARE_ACK_TYPES = ['accept', 'release', 'reject', 'renew'] as const;
/** At most this many records per receive (a REST answer, not a stream). */
export const MAX_RECEIVE_RECORDS = 10_000;

export const receiveSchema = z.object({
  topics: z.array(z.string().min(1)).min(1),
  member_id: z
    .string()
    .min(1)
    .max(255)
    .meta({ description: 'Who acknowledges the records (made up when absent, and answered)' })
    .optional(),
  max_records: z.int().min(1).max(MAX_RECEIVE_RECORDS).default(500),
  max_wait_ms: z.int().min(0).default(0).meta({ description: 'How long to wait while no record is available' }),
  format: z.enum(OUTPUT_FORMATS).default('binary'),
});

export const acknowledgeSchema = z.object({
  member_id: z.string().min(1).max(255),
  request_id: z
    .string()
    .min(1)
    .max(64)
    .meta({
      description:
        'Sent again with a retry of this request: offsets the first attempt acknowledged are answered as then, not refused',
    })
    .optional(),
  acknowledgements: z
    .array(
      z.object({
        topic_name: z.string().min(1),
        partition_id: z.int().min(0),
        offset: z.int().min(0),
        last_offset: z.int().min(0).meta({ description: 'The same type for offset..last_offset' }).optional(),
        type: z.enum(SHARE_ACK_TYPES),
        delivery_count: z
          .int()
          .min(1)
          .meta({ description: 'Refused (INVALID_RECORD_STATE) unless it is the current delivery' })
          .optional(),
      }),
    )
    .min(1)
    .max(MAX_RECEIVE_RECORDS),
});

export const configValueSchema = z.object({ value: z.string() });

export const shareResetSchema = z.object({
  strategy: z.enum(RESET_STRATEGIES).exclude(['to-current', 'shift-by']),
  all_topics: z.boolean().meta({ description: 'Every share-partition the group has state for' }).optional(),
  topics: z
    .array(z.object({ topic_name: z.string().min(1), partition_ids: z.array(z.int().min(0)).optional() }))
    .min(1)
    .optional(),
  offset: z.int().min(0).meta({ description: 'to-offset' }).optional(),
  ...resetFields,
});
export const shareOffsetsDeleteSchema = z.object({ topics: z.array(z.string().min(1)).min(1) });
export const shareOffsetChangeListSchema = z.object({
  kind: z.literal('KafkaShareGroupOffsetChangeList'),
  group_id: z.string(),
  dry_run: z.boolean(),
  data: z.array(
    z.object({
      topic_name: z.string(),
      partition_id: z.int(),
      current_offset: z.int().nullable().meta({ description: 'SPSO before; null where the group had no state' }),
      new_offset: z.int().meta({ description: 'The new SPSO' }),
      error_code: z.int(),
      error: z.string().nullable(),
    }),
  ),
});
export const shareOffsetDeleteListSchema = z.object({
  kind: z.literal('KafkaShareGroupOffsetDeleteList'),
  group_id: z.string(),
  data: z.array(z.object({ topic_name: z.string(), error_code: z.int(), error: z.string().nullable() })),
});

const recordData = z.object({ type: z.enum(DATA_TYPES), data: z.unknown() }).nullable();
export const receivedListSchema = z.object({
  kind: z.literal('KafkaShareRecordList'),
  group_id: z.string(),
  member_id: z.string(),
  data: z.array(
    z.object({
      topic_name: z.string(),
      partition_id: z.int(),
      offset: z.int(),
      timestamp: dateTime,
      key: recordData,
      value: recordData,
      headers: z.array(z.object({ name: z.string(), value: z.string().nullable() })),
      delivery_count: z.int().meta({ description: 'Deliveries so far, this one included (1 on the first)' }),
      lock_expires_at: dateTime.meta({
        description: 'When the lock ends: unacknowledged by then, it is delivered again',
      }),
    }),
  ),
});
export const acknowledgementListSchema = z.object({
  kind: z.literal('KafkaShareAcknowledgementList'),
  group_id: z.string(),
  data: z.array(
    z.object({
      topic_name: z.string(),
      partition_id: z.int(),
      offset: z.int(),
      error_code: z.int(),
      error: z.string().nullable(),
    }),
  ),
});
const GROUP_TYPES = ['classic', 'consumer', 'share'] as const;
export const groupsQuerySchema = z.object({
  types: z
    .string()
    .meta({ description: "Kafka's ListGroups types filter: a comma-separated list of classic, consumer, share" })
    .optional(),
});
export const groupListSchema = z.object({
  kind: z.literal('KafkaGroupList'),
  data: z.array(
    z.object({
      group_id: z.string(),
      type: z.enum(['CLASSIC', 'CONSUMER', 'SHARE']),
      protocol_type: z.string().meta({ description: "Kafka's ListGroups ProtocolType: consumer, share, or empty" }),
      state: z.string(),
    }),
  ),
});
export const shareGroupListSchema = z.object({
  kind: z.literal('KafkaShareGroupList'),
  data: z.array(z.object({ kind: z.literal('KafkaShareGroup'), cluster_id: z.string(), group_id: z.string() })),
});
export const shareGroupSchema = z.object({
  kind: z.literal('KafkaShareGroup'),
  cluster_id: z.string(),
  group_id: z.string(),
  state: z.enum(['EMPTY', 'STABLE']).meta({
    description: 'STABLE while members or receivers hold records under unexpired locks',
  }),
  lag: z.int(),
  members: z
    .array(
      z.object({
        member_id: z.string(),
        member_epoch: z.int(),
        client_id: z.string(),
        client_host: z.string(),
        rack_id: z.string().nullable(),
        subscribed_topic_names: z.array(z.string()),
        assignment: z.array(z.object({ topic_name: z.string(), partition_ids: z.array(z.int()) })),
        last_heartbeat: dateTime.meta({
          description: 'The last heartbeat written (a steady member writes one a third of the session timeout)',
        }),
      }),
    )
    .meta({
      description: "The Kafka protocol's live members (ShareGroupHeartbeat); HTTP receivers have no membership",
    }),
  partitions: z.array(
    z.object({
      topic_name: z.string(),
      partition_id: z.int(),
      start_offset: z.int().meta({ description: 'SPSO: every record below it is acknowledged or archived' }),
      end_offset: z.int().meta({ description: 'SPEO: records from it on were never delivered' }),
      state_epoch: z.int(),
      high_watermark: z.int(),
      lag: z.int().meta({ description: 'Records from SPSO to the high watermark not yet acknowledged or archived' }),
      in_flight: z.object({ available: z.int(), acquired: z.int(), acknowledged: z.int(), archived: z.int() }),
    }),
  ),
});
export const shareGroupConfigListSchema = z.object({
  kind: z.literal('KafkaShareGroupConfigList'),
  group_id: z.string(),
  data: z.array(z.object({ name: z.string(), value: z.string(), is_default: z.boolean() })),
});

type Answer<S extends z.ZodType> = z.input<S>;

// What the client and the console read (src/wire/share-group-json.ts) is what this answers.
export type ShareGroupAnswersAsWire = Holds<Same<WireBody<typeof shareGroupSchema>, ShareGroupJson>>;

const groupParam = (c: Context<AppEnv>) => c.req.param('group')!;

/**
 * The receive answer (receivedListSchema) built as text: each record as the JSON fetch answers
 * show it (`showRecordText`), with its topic, delivery count and lock end. Objects per record
 * and JSON.stringify's walk over them were a tenth of the server's time under bench:share.
 */
function receivedText(group: string, member: string, records: readonly AcquiredRecord[], format: OutputFormat) {
  // One memo for record timestamps, one for lock ends: each mostly repeats within an answer.
  const iso = isoTimestamps();
  const lockIso = isoTimestamps();
  const data = records.map((r) => {
    const shown = showRecordText(r.record, r.partition, format, iso);
    return `{"topic_name":${jsonString(r.topic)},${shown.slice(1, -1)},"delivery_count":${r.deliveries},"lock_expires_at":"${lockIso(r.lockedUntil)}"}`;
  });
  return `{"kind":"KafkaShareRecordList","group_id":${JSON.stringify(group)},"member_id":${JSON.stringify(member)},"data":[${data.join(',')}]}`;
}

/**
 * The acknowledgement answer (acknowledgementListSchema) built as text, as the receive answer is,
 * without an object per offset for JSON.stringify to walk: entries mostly repeat the topic and
 * partition of the one before, whose text is reused.
 */
function acknowledgedText(group: string, acks: readonly ShareAck[], errors: readonly (KafkaErrorName | undefined)[]) {
  let prefix = '';
  let last: ShareAck | undefined;
  const data = acks.map((a, i) => {
    if (a.topic !== last?.topic || a.partition !== last.partition)
      prefix = `{"topic_name":${jsonString(a.topic)},"partition_id":${a.partition},"offset":`;
    last = a;
    const error = errors[i];
    return `${prefix}${a.offset},"error_code":${error ? ERRORS[error].code : 0},"error":${error ? `"${error}"` : 'null'}}`;
  });
  return `{"kind":"KafkaShareAcknowledgementList","group_id":${jsonString(group)},"data":[${data.join(',')}]}`;
}

export function shareGroupRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post('/share-groups/:group/records:receive', async (c) => {
    const group = groupParam(c);
    const body = receiveSchema.parse(await readJson(c));
    await authorize(c, 'READ', 'GROUP', group);
    await authorizeAll(c, 'READ', 'TOPIC', body.topics);
    const { share, limits, topics, fetchPurgatory } = c.get('services');
    const member = body.member_id ?? randomUUID();
    const waitMs = Math.min(body.max_wait_ms, limits.maxFetchWaitMs);
    const receive = () => share.acquire(group, body.topics, member, body.max_records);
    let records: AcquiredRecord[] = [];
    if (waitMs <= 0) records = await receive();
    else {
      let looking = Promise.resolve();
      share.wakeWaitersIn(fetchPurgatory);
      const partitions = await Promise.all(body.topics.map((t) => topics.get(t)));
      // A long poll in the fetch purgatory: looked at again on this process's appends to the topics
      // and its acknowledgements that free records of the group, else on the purgatory's back-off
      // (other processes' appends and releases, and locks that end). Idle, it writes nothing.
      await fetchPurgatory.awaitCondition({
        keys: [
          shareWatchKey(group),
          ...partitions.flatMap((t) =>
            Array.from({ length: t.partitionCount }, (_, p) => partitionWatchKey(t.name, p)),
          ),
        ],
        timeoutMs: waitMs,
        check: () => {
          looking = receive().then((r) => {
            records = r;
          });
          return looking.then(() => records.length > 0);
        },
      });
      // A look still under way when the wait timed out may take records: they are this answer's.
      await looking;
    }
    return c.body(receivedText(group, member, records, body.format), 200, { 'Content-Type': 'application/json' });
  });

  app.post('/share-groups/:group/records:acknowledge', async (c) => {
    const group = groupParam(c);
    const body = acknowledgeSchema.parse(await readJson(c));
    await authorize(c, 'READ', 'GROUP', group);
    await authorizeAll(
      c,
      'READ',
      'TOPIC',
      body.acknowledgements.map((a) => a.topic_name),
    );
    const acks = body.acknowledgements.flatMap((a) => {
      const last = a.last_offset ?? a.offset;
      if (last < a.offset) throw new KafkaError('BAD_REQUEST', 'last_offset is before offset');
      if (last - a.offset >= MAX_RECEIVE_RECORDS)
        throw new KafkaError('BAD_REQUEST', `At most ${MAX_RECEIVE_RECORDS} offsets per acknowledgement`);
      return Array.from({ length: last - a.offset + 1 }, (_, i) => ({
        topic: a.topic_name,
        partition: a.partition_id,
        offset: a.offset + i,
        type: a.type,
        ...(a.delivery_count !== undefined ? { deliveries: a.delivery_count } : {}),
      }));
    });
    const results = await c.get('services').share.acknowledge(group, body.member_id, acks, body.request_id);
    return c.body(acknowledgedText(group, acks, results), 200, { 'Content-Type': 'application/json' });
  });

  app.get('/share-groups', async (c) => {
    const { share, clusterId } = c.get('services');
    const visible = await allowedNames(c, 'DESCRIBE', 'GROUP');
    const groups = (await share.list()).filter(visible);
    const answer: Answer<typeof shareGroupListSchema> = {
      kind: 'KafkaShareGroupList',
      data: groups.map((g) => ({ kind: 'KafkaShareGroup', cluster_id: clusterId, group_id: g })),
    };
    return c.json(answer);
  });

  // Kafka's ListGroups (v5, with its types filter): consumer groups and share groups side by side.
  app.get('/groups', async (c) => {
    const query = groupsQuerySchema.parse(c.req.query());
    const types = new Set(query.types ? query.types.split(',').map((t) => t.trim().toLowerCase()) : GROUP_TYPES);
    for (const t of types)
      if (!(GROUP_TYPES as readonly string[]).includes(t))
        throw new KafkaError('BAD_REQUEST', `Unknown group type ${t}: use classic, consumer or share`);
    const { groups, share } = c.get('services');
    const [all, visible] = await Promise.all([allowed(c, 'DESCRIBE', 'CLUSTER'), allowedNames(c, 'DESCRIBE', 'GROUP')]);
    const shown = (id: string) => all || visible(id);
    const data: Answer<typeof groupListSchema>['data'] = [];
    if (types.has('classic') || types.has('consumer'))
      for (const { group: g, classic } of await groups.admin.list()) {
        const type = g.protocolType === '' || classic ? 'CLASSIC' : 'CONSUMER';
        if (shown(g.groupId) && types.has(type.toLowerCase()))
          data.push({
            group_id: g.groupId,
            type,
            protocol_type: g.protocolType,
            state: g.state.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase(),
          });
      }
    if (types.has('share'))
      for (const id of (await share.list()).filter(shown))
        data.push({ group_id: id, type: 'SHARE', protocol_type: 'share', state: await share.state(id) });
    data.sort((a, b) => (a.group_id < b.group_id ? -1 : a.group_id > b.group_id ? 1 : a.type < b.type ? -1 : 1));
    const answer: Answer<typeof groupListSchema> = { kind: 'KafkaGroupList', data };
    return c.json(answer);
  });

  app.get('/share-groups/:group', async (c) => {
    const group = groupParam(c);
    await authorize(c, 'DESCRIBE', 'GROUP', group);
    const { share, clusterId } = c.get('services');
    const [partitions, state, members] = await Promise.all([
      share.describe(group),
      share.state(group),
      share.members.list(group),
    ]);
    const answer: Answer<typeof shareGroupSchema> = {
      kind: 'KafkaShareGroup',
      cluster_id: clusterId,
      group_id: group,
      state,
      lag: partitions.reduce((n, p) => n + p.lag, 0),
      members: members.map((m) => ({
        member_id: m.memberId,
        member_epoch: m.memberEpoch,
        client_id: m.clientId,
        client_host: m.clientHost,
        rack_id: m.rackId,
        subscribed_topic_names: m.subscribedTopics,
        assignment: m.assignment.map((a) => ({ topic_name: a.topic, partition_ids: a.partitions })),
        last_heartbeat: new Date(m.lastSeen).toISOString(),
      })),
      partitions: partitions.map((p) => ({
        topic_name: p.topic,
        partition_id: p.partition,
        start_offset: p.startOffset,
        end_offset: p.endOffset,
        state_epoch: p.stateEpoch,
        high_watermark: p.highWatermark,
        lag: p.lag,
        in_flight: p.inFlight,
      })),
    };
    return c.json(answer);
  });

  // Kafka's DeleteGroups of a share group (Admin.deleteShareGroups): DELETE on the group; only an
  // empty one (no member, no record locked by a receiver), its share-partitions' state with it.
  app.delete('/share-groups/:group', async (c) => {
    const group = groupParam(c);
    await authorize(c, 'DELETE', 'GROUP', group);
    await c.get('services').share.deleteGroup(group);
    return c.body(null, 204);
  });

  app.get('/share-groups/:group/configs', async (c) => {
    const group = groupParam(c);
    await authorize(c, 'DESCRIBE_CONFIGS', 'GROUP', group);
    const configs = await c.get('services').share.describeConfigs(group);
    const answer: Answer<typeof shareGroupConfigListSchema> = {
      kind: 'KafkaShareGroupConfigList',
      group_id: group,
      data: configs.map((x) => ({ name: x.name, value: x.value, is_default: x.isDefault })),
    };
    return c.json(answer);
  });

  // AlterShareGroupOffsets (kafka-share-groups.sh --reset-offsets): READ on the group and the topics.
  app.post('/share-groups/:group/offsets:reset', async (c) => {
    const group = groupParam(c);
    const body = shareResetSchema.parse(await readJson(c));
    const scope = resetScope(body);
    await authorize(c, 'READ', 'GROUP', group);
    const { share } = c.get('services');
    const topics = body.topics
      ? body.topics.map((t) => t.topic_name)
      : [...new Set((await share.describe(group)).map((p) => p.topic))];
    await authorizeAll(c, 'READ', 'TOPIC', topics);
    const changes = await share.resetOffsets(group, scope, resetStrategy(body), body.dry_run);
    const answer: Answer<typeof shareOffsetChangeListSchema> = {
      kind: 'KafkaShareGroupOffsetChangeList',
      group_id: group,
      dry_run: body.dry_run,
      data: changes.map((x) => ({
        topic_name: x.topic,
        partition_id: x.partition,
        current_offset: x.currentOffset,
        new_offset: x.newOffset,
        error_code: x.error ? ERRORS[x.error].code : 0,
        error: x.error ?? null,
      })),
    };
    return c.json(answer);
  });

  // DeleteShareGroupOffsets (kafka-share-groups.sh --delete-offsets): DELETE on the group, READ on the topics.
  app.post('/share-groups/:group/offsets:delete', async (c) => {
    const group = groupParam(c);
    const body = shareOffsetsDeleteSchema.parse(await readJson(c));
    await authorize(c, 'DELETE', 'GROUP', group);
    await authorizeAll(c, 'READ', 'TOPIC', body.topics);
    const errors = await c.get('services').share.deleteOffsets(group, body.topics);
    const answer: Answer<typeof shareOffsetDeleteListSchema> = {
      kind: 'KafkaShareGroupOffsetDeleteList',
      group_id: group,
      data: body.topics.map((t, i) => {
        const error = errors[i];
        return { topic_name: t, error_code: error ? ERRORS[error].code : 0, error: error ?? null };
      }),
    };
    return c.json(answer);
  });

  const configName = (c: Context<AppEnv>) => {
    const name = c.req.param('name')!;
    if (!Object.hasOwn(SHARE_GROUP_CONFIG_NAMES, name))
      throw new KafkaError('NOT_FOUND', `${name} is not a share group config`);
    return name;
  };

  // Several configs in one write: all are stored or none (ShareGroups.alterConfigs).
  app.post('/share-groups/:group/configs:alter', async (c) => {
    const group = groupParam(c);
    const body = alterConfigsSchema.parse(await readJson(c));
    await authorize(c, 'ALTER_CONFIGS', 'GROUP', group);
    await c.get('services').share.alterConfigs(group, configChanges(body), body.validate_only);
    return c.body(null, 204);
  });

  app.put('/share-groups/:group/configs/:name', async (c) => {
    const group = groupParam(c);
    const name = configName(c);
    const body = configValueSchema.parse(await readJson(c));
    await authorize(c, 'ALTER_CONFIGS', 'GROUP', group);
    await c.get('services').share.alterConfigs(group, [{ name, value: body.value }]);
    return c.body(null, 204);
  });

  app.delete('/share-groups/:group/configs/:name', async (c) => {
    const group = groupParam(c);
    const name = configName(c);
    await authorize(c, 'ALTER_CONFIGS', 'GROUP', group);
    await c.get('services').share.alterConfigs(group, [{ name, value: null }]);
    return c.body(null, 204);
  });

  return app;
}
