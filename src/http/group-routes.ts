import { Hono, type Context } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import { assignmentOf, owns } from '../groups/assignment.js';
import { type PartitionLag, summarizeLags } from '../groups/group-admin.js';
import { ASSIGNOR_NAMES, parseAssignorName } from '../groups/assignors.js';
import type { AutoOffsetReset } from '../groups/offsets.js';
import type { AppEnv } from './app-env.js';
import { GroupResources } from './group-resources.js';
import { RESET_STRATEGIES, resetFields, resetScope, resetStrategy } from './offset-reset-body.js';
import { mapBounded, partitionPage } from '../topics/partition-scan.js';
import { nextPageUrl, pageCursor } from './page-token.js';
import { intQuery, ISOLATION_LEVELS, parseQuery, partitionParam, readJson } from './request.js';
import { allowed, allowedNames, authorize, authorizeAll } from './security.js';

const partitionRef = z.object({ topic_name: z.string(), partition_id: z.int().min(0) });

export const heartbeatSchema = z.object({
  member_id: z.string().meta({ description: 'Empty on the first call: the server names the member' }).default(''),
  member_epoch: z
    .int()
    .meta({ description: '0 to join (or rejoin after FENCED_MEMBER_EPOCH), -1 to leave, else the epoch last received' })
    .default(0),
  client_id: z.string().optional(),
  subscribed_topic_names: z
    .array(z.string())
    .meta({ description: 'Required when joining; absent = unchanged' })
    .optional(),
  // Checked by parseAssignorName (UNSUPPORTED_ASSIGNOR), which also takes Kafka's class names.
  assignor: z
    .string()
    .meta({ examples: [...ASSIGNOR_NAMES] })
    .optional(),
  // Bounded by the coordinator (INVALID_SESSION_TIMEOUT), as Kafka's group.*.session.timeout.ms.
  'session.timeout.ms': z.int().meta({ minimum: 6000, maximum: 1800000, default: 45000 }).optional(),
  'max.poll.interval.ms': z
    .int()
    .meta({ default: 300000, description: 'Rebalance timeout: partitions to revoke must be released within it' })
    .optional(),
  owned_partitions: z
    .array(partitionRef)
    .meta({
      description: 'Optional: what the member still consumes. Without it a heartbeat acknowledges the previous answer',
    })
    .optional(),
});

export const commitSchema = z.object({
  member_id: z.string().optional(),
  generation_id: z.int().meta({ description: 'The member epoch (member_epoch is accepted too)' }).optional(),
  member_epoch: z.int().optional(),
  offsets: z.array(partitionRef.extend({ offset: z.int(), metadata: z.string().optional() })).min(1),
});

export const resetSchema = z.object({
  strategy: z.enum(RESET_STRATEGIES),
  all_topics: z.boolean().meta({ description: 'Every partition with a committed offset' }).optional(),
  topics: z.array(z.object({ topic_name: z.string(), partition_ids: z.array(z.int().min(0)).optional() })).optional(),
  offset: z.int().meta({ description: 'to-offset' }).optional(),
  shift_by: z.int().meta({ description: 'shift-by' }).optional(),
  ...resetFields,
});

const AUTO_OFFSET_RESETS = ['earliest', 'latest', 'none'] as const satisfies readonly AutoOffsetReset[];
export const offsetsQuerySchema = z.object({
  topic_name: z.string().optional(),
  partition_id: intQuery(z.int().min(0)).optional(),
  auto_offset_reset: z
    .enum(AUTO_OFFSET_RESETS)
    .meta({ description: 'none fails with NO_OFFSET_FOR_PARTITION or OFFSET_OUT_OF_RANGE (416)' })
    .optional(),
  isolation_level: z
    .enum(ISOLATION_LEVELS)
    .meta({ description: 'With auto_offset_reset=latest: read_committed starts at the last stable offset' })
    .optional(),
  require_stable: z
    .enum(['true', 'false'])
    .meta({
      description:
        "Kafka's require_stable (KIP-447): while a transaction not yet complete holds offsets of the group for a partition asked for, 409 UNSTABLE_OFFSET_COMMIT (retriable)",
    })
    .optional(),
  page_token: z
    .string()
    .meta({ description: 'With auto_offset_reset: where the previous page stopped (its metadata.next)' })
    .optional(),
});

const groupParam = (c: Context<AppEnv>) => c.req.param('group')!;
const res = (c: Context<AppEnv>) => new GroupResources(c.get('resources'));

/** A group's lags on the topics the caller may DESCRIBE (the others are not shown, as in OffsetFetch). */
async function visibleLags(c: Context<AppEnv>, groupId: string) {
  const [lags, visible] = await Promise.all([
    c.get('services').groups.admin.lags(groupId),
    allowedNames(c, 'DESCRIBE', 'TOPIC'),
  ]);
  return lags.filter((l) => visible(l.topic));
}

/**
 * Consumer groups on Confluent v3's paths (list, describe, consumers, assignments, lags, lag summary)
 * and v3-style extensions where v3 has none: membership heartbeats, leave, committed offsets,
 * offset commit and reset, delete.
 */
export function groupRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/consumer-groups', async (c) => {
    const r = res(c);
    // Kafka's ListGroups: every group with DESCRIBE on the cluster, else those the caller may DESCRIBE.
    const [groups, all, visible] = await Promise.all([
      c.get('services').groups.admin.list(),
      allowed(c, 'DESCRIBE', 'CLUSTER'),
      allowedNames(c, 'DESCRIBE', 'GROUP'),
    ]);
    const shown = all ? groups : groups.filter((g) => visible(g.group.groupId));
    return c.json(
      r.list(
        'KafkaConsumerGroupList',
        `${c.get('resources').base}/consumer-groups`,
        shown.map((g) => r.group(g.group, g.classic)),
      ),
    );
  });

  app.get('/consumer-groups/:group', async (c) => {
    await authorize(c, 'DESCRIBE', 'GROUP', groupParam(c));
    const { group, partitions, classic } = await c.get('services').groups.admin.describe(groupParam(c));
    return c.json(res(c).description(group, partitions, classic));
  });

  app.delete('/consumer-groups/:group', async (c) => {
    await authorize(c, 'DELETE', 'GROUP', groupParam(c));
    await c.get('services').groups.admin.delete(groupParam(c));
    return c.body(null, 204);
  });

  // Extension: KIP-848's ConsumerGroupHeartbeat (join with member_epoch 0, leave with -1).
  app.post('/consumer-groups/:group/consumers:heartbeat', async (c) => {
    const body = heartbeatSchema.parse(await readJson(c));
    // KIP-848: READ on the group, DESCRIBE on every subscribed topic.
    await authorize(c, 'READ', 'GROUP', groupParam(c));
    await authorizeAll(c, 'DESCRIBE', 'TOPIC', body.subscribed_topic_names ?? []);
    const answer = await c.get('services').groups.coordinator.heartbeat(groupParam(c), {
      memberId: body.member_id,
      memberEpoch: body.member_epoch,
      ...(body.client_id === undefined ? {} : { clientId: body.client_id }),
      ...(body.subscribed_topic_names === undefined ? {} : { subscribedTopics: body.subscribed_topic_names }),
      ...(body.assignor === undefined ? {} : { assignor: parseAssignorName(body.assignor) }),
      ...(body['session.timeout.ms'] === undefined ? {} : { sessionTimeoutMs: body['session.timeout.ms'] }),
      ...(body['max.poll.interval.ms'] === undefined ? {} : { rebalanceTimeoutMs: body['max.poll.interval.ms'] }),
      ...(body.owned_partitions === undefined
        ? {}
        : {
            ownedPartitions: assignmentOf(
              body.owned_partitions.map((p) => ({ topic: p.topic_name, partition: p.partition_id })),
            ),
          }),
    });
    return c.json(res(c).heartbeat(answer));
  });

  app.get('/consumer-groups/:group/consumers', async (c) => {
    await authorize(c, 'DESCRIBE', 'GROUP', groupParam(c));
    const g = await c.get('services').groups.coordinator.get(groupParam(c));
    const r = res(c);
    return c.json(
      r.list(
        'KafkaConsumerList',
        `${r.groupUrl(g.groupId)}/consumers`,
        Object.values(g.members).map((m) => r.consumer(g, m)),
      ),
    );
  });

  const member = async (c: Context<AppEnv>) => {
    const g = await c.get('services').groups.coordinator.get(groupParam(c));
    const m = g.members[c.req.param('consumer')!];
    if (!m)
      throw new KafkaError(
        'UNKNOWN_MEMBER_ID',
        `Consumer ${c.req.param('consumer')} is not a member of group ${g.groupId}`,
      );
    return { g, m };
  };

  app.get('/consumer-groups/:group/consumers/:consumer', async (c) => {
    await authorize(c, 'DESCRIBE', 'GROUP', groupParam(c));
    const { g, m } = await member(c);
    return c.json(res(c).consumer(g, m));
  });

  // Extension: LeaveGroup.
  app.delete('/consumer-groups/:group/consumers/:consumer', async (c) => {
    await authorize(c, 'READ', 'GROUP', groupParam(c)); // LeaveGroup
    await c.get('services').groups.coordinator.leave(groupParam(c), c.req.param('consumer'));
    return c.body(null, 204);
  });

  app.get('/consumer-groups/:group/consumers/:consumer/assignments', async (c) => {
    await authorize(c, 'DESCRIBE', 'GROUP', groupParam(c));
    const { g, m } = await member(c);
    const r = res(c);
    const data = Object.entries(m.assigned).flatMap(([t, ps]) => ps.map((p) => r.assignment(g, m, t, p)));
    return c.json(
      r.list(
        'KafkaConsumerAssignmentList',
        `${r.groupUrl(g.groupId)}/consumers/${encodeURIComponent(m.memberId)}/assignments`,
        data,
      ),
    );
  });

  app.get('/consumer-groups/:group/consumers/:consumer/assignments/:topic/partitions/:partition', async (c) => {
    await authorize(c, 'DESCRIBE', 'GROUP', groupParam(c));
    const { g, m } = await member(c);
    const topic = c.req.param('topic');
    const p = partitionParam(c.req.param('partition'));
    if (!owns(m.assigned, topic, p))
      throw new KafkaError('NOT_FOUND', `Consumer ${m.memberId} is not assigned ${topic}-${p}`);
    return c.json(res(c).assignment(g, m, topic, p));
  });

  app.get('/consumer-groups/:group/lags', async (c) => {
    await authorize(c, 'DESCRIBE', 'GROUP', groupParam(c));
    const groups = c.get('services').groups;
    const g = await groups.coordinator.get(groupParam(c));
    const r = res(c);
    const lags = await visibleLags(c, g.groupId);
    return c.json(
      r.list(
        'KafkaConsumerLagList',
        `${r.groupUrl(g.groupId)}/lags`,
        lags.map((l) => r.lag(g, l)),
      ),
    );
  });

  app.get('/consumer-groups/:group/lags/:topic/partitions/:partition', async (c) => {
    await authorize(c, 'DESCRIBE', 'GROUP', groupParam(c));
    await authorize(c, 'DESCRIBE', 'TOPIC', c.req.param('topic'));
    const groups = c.get('services').groups;
    const g = await groups.coordinator.get(groupParam(c));
    const p = partitionParam(c.req.param('partition'));
    const here = (l: PartitionLag) => l.topic === c.req.param('topic') && l.partition === p;
    // A partition the group has no offset for yet but a member is assigned (the assignment's lag
    // link) has a lag too, with no current offset, as in the group's describe.
    const lag =
      (await groups.admin.lags(g.groupId)).find(here) ??
      (await groups.admin.describe(g.groupId)).partitions.find((l) => here(l) && l.owner !== undefined);
    if (!lag)
      throw new KafkaError('NOT_FOUND', `Group ${g.groupId} has no committed offset for ${c.req.param('topic')}-${p}`);
    return c.json(res(c).lag(g, lag));
  });

  app.get('/consumer-groups/:group/lag-summary', async (c) => {
    await authorize(c, 'DESCRIBE', 'GROUP', groupParam(c));
    const g = await c.get('services').groups.coordinator.get(groupParam(c));
    return c.json(res(c).lagSummary(g, summarizeLags(await visibleLags(c, g.groupId))));
  });

  // Extension: OffsetFetch. With auto_offset_reset (and topic_name), every partition of the topic
  // with the position a consumer starts from: the committed offset if valid, else the reset one.
  app.get('/consumer-groups/:group/offsets', async (c) => {
    const { groups, topics } = c.get('services');
    const groupId = groupParam(c);
    const query = parseQuery(c, offsetsQuerySchema);
    const { topic_name: topicName, partition_id: partition, auto_offset_reset: reset } = query;
    const r = res(c);
    const self = `${r.groupUrl(groupId)}/offsets`;
    // Kafka's OffsetFetch: DESCRIBE on the group; a named topic needs DESCRIBE, unnamed ones are filtered.
    await authorize(c, 'DESCRIBE', 'GROUP', groupId);
    if (topicName !== undefined) await authorize(c, 'DESCRIBE', 'TOPIC', topicName);
    if (query.require_stable === 'true') {
      // KIP-447 (a read_committed consumer asks so): offsets an open transaction is about to commit
      // are not answered until it ends; the caller retries.
      const unstable = [...(await c.get('services').transactions.unstableOffsets(groupId))].filter((k) => {
        const at = k.lastIndexOf('#');
        return (
          (topicName === undefined || k.slice(0, at) === topicName) &&
          (partition === undefined || Number(k.slice(at + 1)) === partition)
        );
      });
      if (unstable.length > 0)
        throw new KafkaError(
          'UNSTABLE_OFFSET_COMMIT',
          `Group ${groupId} has offsets in a transaction not yet complete for ${unstable.join(', ')}; retry`,
        );
    }
    if (reset === undefined) {
      const all = await groups.offsets.committed(groupId, topicName);
      // A group that only has offsets (committed by a transaction, or by a client outside any
      // membership) exists, as Kafka's Empty group does; one with neither is GROUP_ID_NOT_FOUND.
      if (all.length === 0 && (topicName === undefined || (await groups.offsets.committed(groupId)).length === 0))
        await groups.coordinator.get(groupId);
      const visible = await allowedNames(c, 'DESCRIBE', 'TOPIC');
      const committed = all.filter((o) => visible(o.topic) && (partition === undefined || o.partition === partition));
      return c.json(
        r.list(
          'KafkaConsumerGroupOffsetList',
          self,
          committed.map((o) => r.offset(groupId, o.topic, o.partition, o)),
        ),
      );
    }
    if (topicName === undefined) throw new KafkaError('BAD_REQUEST', 'auto_offset_reset needs topic_name');
    const isolation = query.isolation_level ?? 'read_uncommitted';
    const topic = await topics.get(topicName);
    const after = pageCursor(c);
    const { page, next } =
      partition === undefined ? partitionPage([topic], after ? { after } : {}) : { page: [{ topic, partition }] };
    const data = await mapBounded(page, async ({ partition: p }) => {
      const pos = await groups.offsets.position(groupId, topic, p, reset, undefined, isolation);
      return r.offset(groupId, topic.name, p, pos.committed, pos);
    });
    return c.json(r.list('KafkaConsumerGroupOffsetList', self, data, nextPageUrl(c, next)));
  });

  // The self of a KafkaConsumerGroupOffset: one partition's committed offset.
  app.get('/consumer-groups/:group/offsets/:topic/partitions/:partition', async (c) => {
    const { groups } = c.get('services');
    const groupId = groupParam(c);
    const topic = c.req.param('topic');
    const partition = partitionParam(c.req.param('partition'));
    await authorize(c, 'DESCRIBE', 'GROUP', groupId);
    await authorize(c, 'DESCRIBE', 'TOPIC', topic);
    const committed = (await groups.offsets.committed(groupId, topic)).find((o) => o.partition === partition);
    if (!committed) {
      await groups.coordinator.get(groupId); // GROUP_ID_NOT_FOUND first, as the list does
      throw new KafkaError('NOT_FOUND', `Group ${groupId} has no committed offset for ${topic}-${partition}`);
    }
    return c.json(res(c).offset(groupId, topic, partition, committed));
  });

  // Extension: OffsetCommit, by a member (member_id + generation_id) or, for a group without
  // members, by an administrator (no member_id).
  app.post('/consumer-groups/:group/offsets:commit', async (c) => {
    const body = commitSchema.parse(await readJson(c));
    const groupId = groupParam(c);
    // Kafka's OffsetCommit: READ on the group and on every topic.
    await authorize(c, 'READ', 'GROUP', groupId);
    await authorizeAll(
      c,
      'READ',
      'TOPIC',
      body.offsets.map((o) => o.topic_name),
    );
    const generation = body.generation_id ?? body.member_epoch;
    const records = await c.get('services').groups.offsets.commit(groupId, {
      ...(body.member_id === undefined ? {} : { memberId: body.member_id }),
      ...(generation === undefined ? {} : { generation }),
      offsets: body.offsets.map((o) => ({
        topic: o.topic_name,
        partition: o.partition_id,
        offset: o.offset,
        ...(o.metadata === undefined ? {} : { metadata: o.metadata }),
      })),
    });
    const r = res(c);
    return c.json(
      r.list(
        'KafkaConsumerGroupOffsetList',
        `${r.groupUrl(groupId)}/offsets`,
        records.map((o) => r.offset(groupId, o.topic, o.partition, o)),
      ),
    );
  });

  // Extension: kafka-consumer-groups.sh --reset-offsets, for an inactive group.
  app.post('/consumer-groups/:group/offsets:reset', async (c) => {
    const body = resetSchema.parse(await readJson(c));
    const scope = resetScope(body);
    const dryRun = body.dry_run;
    const groupId = groupParam(c);
    // An offset reset is an OffsetCommit by an admin: READ on the group and on each topic it moves.
    await authorize(c, 'READ', 'GROUP', groupId);
    const topicsMoved = body.all_topics
      ? (await c.get('services').groups.offsets.committed(groupId)).map((o) => o.topic)
      : body.topics!.map((t) => t.topic_name);
    await authorizeAll(c, 'READ', 'TOPIC', topicsMoved);
    const plan = await c.get('services').groups.resetOffsets(groupId, scope, resetStrategy(body), dryRun);
    return c.json(res(c).resetPlan(groupId, body.strategy, dryRun, plan));
  });

  return app;
}
