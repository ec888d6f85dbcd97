/**
 * Share groups over the Kafka protocol (KIP-932), on the same ShareGroups as the HTTP routes
 * (src/share): ShareGroupHeartbeat and ShareGroupDescribe on the membership (share-members.ts),
 * ShareFetch and ShareAcknowledge on the share-partitions through the listener's share sessions
 * (../share-sessions.ts). Authorization as Kafka's KafkaApis: READ on the group for heartbeats,
 * fetches and acknowledgements, DESCRIBE on it to describe it, DESCRIBE on subscribed topics, READ
 * on the topics fetched from or acknowledged.
 */
import { shareWatchKey, type AcquiredRecord, type ShareAck } from '../../share/share-groups.js';
import { partitionWatchKey } from '../../timer/delayed-fetch.js';
import type { AssignedTopic, ShareMember } from '../../share/share-members.js';
import { ACKNOWLEDGE_TYPES } from '../../share/share-partition.js';
import type { Topic } from '../../topics/topics.js';
import { KafkaError, isKafkaError, type KafkaErrorName } from '../../wire/errors.js';
import { encodeRecordBatch } from '../../wire/record-batch.js';
import { partitionKey, type SharePartitionKey, type ShareSession } from '../share-sessions.js';
import { authorize, deniedAmong } from './access.js';
import { errorCodeOf, errorMessageOf, type Handler, heartbeatFailed, type RequestContext } from './context.js';
import { topicIdBytes, topicIdString } from './topic-ids.js';

/** Kafka's share.max.fetch.records default and a bound on what one request may ask for. */
const DEFAULT_MAX_RECORDS = 500;
const MAX_RECORDS = 10_000;
/** Offsets one request may acknowledge (its batches expanded): beyond, INVALID_REQUEST. */
const MAX_ACKNOWLEDGED_OFFSETS = 100_000;
const NO_LEADER = { leaderId: -1, leaderEpoch: -1 };

export const shareGroupHeartbeat: Handler = async (ctx, req) => {
  try {
    await authorize(ctx, 'READ', 'GROUP', req.groupId);
    const subscribed = req.subscribedTopicNames as string[] | null;
    if (subscribed) {
      const first = (await deniedAmong(ctx, 'DESCRIBE', 'TOPIC', subscribed)).values().next();
      if (!first.done) throw first.value;
    }
    const a = await ctx.services.share.members.heartbeat(req.groupId, {
      memberId: req.memberId,
      memberEpoch: req.memberEpoch,
      rackId: req.rackId,
      subscribedTopics: subscribed,
      clientId: ctx.clientId,
      clientHost: ctx.clientHost,
    });
    return {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      memberId: a.memberId,
      memberEpoch: a.memberEpoch,
      heartbeatIntervalMs: a.heartbeatIntervalMs,
      assignment: a.assignment
        ? {
            topicPartitions: a.assignment.map((t) => ({ topicId: topicIdBytes(t.topicId), partitions: t.partitions })),
          }
        : null,
    };
  } catch (e) {
    return heartbeatFailed(ctx, e);
  }
};

/**
 * Each group with its live members. The group epoch and the assignment epoch are the highest
 * member epoch: members' assignments change only with their own subscriptions (share-members.ts),
 * so there is no group-wide epoch to report.
 */
export const shareGroupDescribe: Handler = async (ctx, req) => {
  const { share } = ctx.services;
  const groups = await Promise.all(
    (req.groupIds as string[]).map(async (groupId) => {
      try {
        if (groupId === '') throw new KafkaError('INVALID_GROUP_ID', 'The group id is empty');
        await authorize(ctx, 'DESCRIBE', 'GROUP', groupId);
        await share.requireGroup(groupId);
        const members = await share.members.list(groupId);
        const topics = new Set(members.flatMap((m) => [...m.subscribedTopics, ...m.assignment.map((t) => t.topic)]));
        const first = (await deniedAmong(ctx, 'DESCRIBE', 'TOPIC', topics)).values().next();
        if (!first.done) throw first.value;
        const epoch = Math.max(0, ...members.map((m) => m.memberEpoch));
        // Without members, HTTP receivers holding records under a lock keep the group Stable:
        // the state ListGroups, the HTTP routes and the offset changes go by.
        const stable = members.length > 0 || (await share.state(groupId)) === 'STABLE';
        return {
          errorCode: 0,
          errorMessage: null,
          groupId,
          groupState: stable ? 'Stable' : 'Empty',
          groupEpoch: epoch,
          assignmentEpoch: epoch,
          assignorName: 'simple',
          members: members.map(describedMember),
          authorizedOperations: -2147483648,
        };
      } catch (e) {
        return {
          errorCode: errorCodeOf(ctx, e),
          errorMessage: errorMessageOf(e),
          groupId,
          groupState: '',
          groupEpoch: -1,
          assignmentEpoch: -1,
          assignorName: '',
          members: [],
          authorizedOperations: -2147483648,
        };
      }
    }),
  );
  return { throttleTimeMs: 0, groups };
};

const describedMember = (m: ShareMember) => ({
  memberId: m.memberId,
  rackId: m.rackId,
  memberEpoch: m.memberEpoch,
  clientId: m.clientId,
  clientHost: m.clientHost,
  subscribedTopicNames: m.subscribedTopics,
  assignment: {
    topicPartitions: m.assignment.map((t: AssignedTopic) => ({
      topicId: topicIdBytes(t.topicId),
      topicName: t.topic,
      partitions: t.partitions,
    })),
  },
});

interface AckBatch {
  firstOffset: number;
  lastOffset: number;
  acknowledgeTypes: number[];
}

interface RequestPartition {
  partitionIndex: number;
  acknowledgementBatches: AckBatch[];
}

interface RequestTopic {
  topicId: Uint8Array;
  partitions: RequestPartition[];
}

/** A share-partition of a request or a session, with its topic when the id is known. */
interface Target extends SharePartitionKey {
  topicIdBytes: Uint8Array;
  topic?: Topic;
  error?: KafkaError;
}

interface PartitionAnswer {
  partitionIndex: number;
  errorCode: number;
  errorMessage: string | null;
  acknowledgeErrorCode: number;
  acknowledgeErrorMessage: string | null;
  currentLeader: typeof NO_LEADER;
  records: Uint8Array | null;
  acquiredRecords: { firstOffset: number; lastOffset: number; deliveryCount: number }[];
}

export const shareFetch: Handler = async (ctx, req, version) => {
  const lockMs = async () => (req.groupId ? (await ctx.services.share.config(req.groupId)).recordLockDurationMs : 0);
  try {
    const { group, member } = await shareRequestOf(ctx, req);
    const topics = req.topics as RequestTopic[];
    const offsets = parseAcks(topics, version);
    const epoch = req.shareSessionEpoch as number;
    let session: ShareSession;
    if (epoch === 0) {
      if (topics.some((t) => t.partitions.some((p) => p.acknowledgementBatches.length > 0)))
        throw new KafkaError('INVALID_REQUEST', 'Acknowledgements can not open a share session');
      session = openSession(ctx, group, member);
    } else if (epoch === -1) session = ctx.shareSessions.require(group, member);
    else session = ctx.shareSessions.next(group, member, epoch);

    const requested = await targetsOf(ctx, topics);
    for (const t of (req.forgottenTopicsData as { topicId: Uint8Array; partitions: number[] }[]).flatMap((f) =>
      f.partitions.map((partition) => ({ topicId: topicIdString(f.topicId), partition })),
    ))
      session.partitions.delete(partitionKey(t));
    for (const t of requested) session.partitions.set(partitionKey(t), { topicId: t.topicId, partition: t.partition });

    const answers = new Map<string, PartitionAnswer>();
    const answerOf = (t: SharePartitionKey) => {
      let a = answers.get(partitionKey(t));
      if (!a) answers.set(partitionKey(t), (a = emptyAnswer(t.partition)));
      return a;
    };
    for (const t of requested) answerOf(t);
    const ackErrors = await acknowledgeAll(ctx, group, member, requested, offsets);
    for (const [key, e] of ackErrors) {
      const a = answers.get(key)!;
      a.acknowledgeErrorCode = e.code;
      a.acknowledgeErrorMessage = e.message;
    }
    if (epoch === -1) {
      ctx.shareSessions.end(session);
    } else {
      const sessionTargets = await targetsOf(
        ctx,
        [...session.partitions.values()].map((p) => ({
          topicId: topicIdBytes(p.topicId),
          partitions: [{ partitionIndex: p.partition, acknowledgementBatches: [] }],
        })),
      );
      for (const t of sessionTargets)
        if (t.error) {
          // An id no topic has, or a partition past its count, leaves the session and is said once.
          session.partitions.delete(partitionKey(t));
          const a = answerOf(t);
          a.errorCode = t.error.code;
          a.errorMessage = t.error.message;
        }
      const readable = sessionTargets.filter((t) => !t.error);
      const maxRecords = Math.min(MAX_RECORDS, req.maxRecords > 0 ? req.maxRecords : DEFAULT_MAX_RECORDS);
      const maxBytes = Math.max(1, Math.min(req.maxBytes, ctx.services.limits.maxFetchBytes));
      const waitMs = Math.min(Math.max(0, req.maxWaitMs), ctx.services.limits.maxFetchWaitMs);
      const look = () => acquireAll(ctx, group, member, readable, maxRecords, maxBytes);
      const acquired =
        waitMs > 0 && readable.length > 0 ? await lookUntilAcquired(ctx, group, readable, waitMs, look) : await look();
      for (const [key, e] of acquired.errors) {
        const t = readable.find((r) => partitionKey(r) === key)!;
        const a = answerOf(t);
        a.errorCode = errorCodeOf(ctx, e);
        a.errorMessage = errorMessageOf(e);
      }
      for (const t of readable) {
        const got = acquired.records.filter((r) => r.topic === t.topic!.name && r.partition === t.partition);
        if (got.length === 0) continue;
        Object.assign(answerOf(t), encodeAcquired(got));
      }
    }
    const byTopic = new Map<string, { topicId: Uint8Array; partitions: PartitionAnswer[] }>();
    for (const [key, a] of answers) {
      const topicId = key.slice(0, key.lastIndexOf(':'));
      const entry = byTopic.get(topicId) ?? { topicId: topicIdBytes(topicId), partitions: [] as PartitionAnswer[] };
      entry.partitions.push(a);
      byTopic.set(topicId, entry);
    }
    return {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      acquisitionLockTimeoutMs: await lockMs(),
      responses: [...byTopic.values()],
      nodeEndpoints: [],
    };
  } catch (e) {
    return requestFailed(ctx, e);
  }
};

export const shareAcknowledge: Handler = async (ctx, req, version) => {
  try {
    const { group, member } = await shareRequestOf(ctx, req);
    const epoch = req.shareSessionEpoch as number;
    if (epoch === 0)
      throw new KafkaError('INVALID_SHARE_SESSION_EPOCH', 'ShareAcknowledge can not open a share session');
    const topics = req.topics as RequestTopic[];
    const offsets = parseAcks(topics, version);
    const session =
      epoch === -1 ? ctx.shareSessions.require(group, member) : ctx.shareSessions.next(group, member, epoch);
    const requested = await targetsOf(ctx, topics);
    const errors = await acknowledgeAll(ctx, group, member, requested, offsets);
    if (epoch === -1) ctx.shareSessions.end(session);
    const byTopic = new Map<string, { topicId: Uint8Array; partitions: unknown[] }>();
    for (const t of requested) {
      const e = errors.get(partitionKey(t));
      const entry = byTopic.get(t.topicId) ?? { topicId: t.topicIdBytes, partitions: [] as unknown[] };
      entry.partitions.push({
        partitionIndex: t.partition,
        errorCode: e?.code ?? 0,
        errorMessage: e?.message ?? null,
        currentLeader: NO_LEADER,
      });
      byTopic.set(t.topicId, entry);
    }
    return {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      acquisitionLockTimeoutMs: (await ctx.services.share.config(group)).recordLockDurationMs,
      responses: [...byTopic.values()],
      nodeEndpoints: [],
    };
  } catch (e) {
    return requestFailed(ctx, e);
  }
};

/** A ShareFetch or ShareAcknowledge failed as a whole: the error at the top level, no partitions. */
function requestFailed(ctx: RequestContext, e: unknown) {
  return {
    throttleTimeMs: 0,
    errorCode: errorCodeOf(ctx, e),
    errorMessage: errorMessageOf(e),
    acquisitionLockTimeoutMs: 0,
    responses: [],
    nodeEndpoints: [],
  };
}

/** The group and member of a ShareFetch or ShareAcknowledge, READ on the group checked. */
async function shareRequestOf(ctx: RequestContext, req: { groupId: string | null; memberId: string | null }) {
  if (!req.groupId) throw new KafkaError('INVALID_REQUEST', 'GroupId is required');
  await authorize(ctx, 'READ', 'GROUP', req.groupId);
  if (!req.memberId) throw new KafkaError('INVALID_REQUEST', 'MemberId is required');
  return { group: req.groupId, member: req.memberId };
}

/** A new session; when it ends without the member closing it (its connection closed), the records it holds are released. */
function openSession(ctx: RequestContext, group: string, member: string): ShareSession {
  const session = ctx.shareSessions.open(group, member, ctx.signal);
  session.onEnd = (s) => {
    if (s.partitions.size === 0) return;
    const keys = [...s.partitions.values()];
    void ctx.services.topics
      .getByIds(keys.map((k) => k.topicId))
      .then((byId) =>
        ctx.services.share.release(
          group,
          member,
          keys.flatMap((k) => {
            const topic = byId.get(k.topicId);
            return topic && k.partition < topic.partitionCount ? [{ topic, partition: k.partition }] : [];
          }),
        ),
      )
      .catch((e: unknown) => ctx.logger.warn('share session release failed', { group, member, error: String(e) }));
  };
  return session;
}

/** The request's partitions with their topics: UNKNOWN_TOPIC_ID for an id no topic has, UNKNOWN_TOPIC_OR_PARTITION past its count. */
async function targetsOf(ctx: RequestContext, topics: RequestTopic[]): Promise<Target[]> {
  const byId = await ctx.services.topics.getByIds(topics.map((t) => topicIdString(t.topicId)));
  return topics.flatMap((t) => {
    const topicId = topicIdString(t.topicId);
    const topic = byId.get(topicId);
    return t.partitions.map(({ partitionIndex: partition }): Target => {
      const base = { topicId, topicIdBytes: t.topicId, partition };
      if (!topic) return { ...base, error: new KafkaError('UNKNOWN_TOPIC_ID', `No topic has the id ${topicId}`) };
      if (partition < 0 || partition >= topic.partitionCount)
        return {
          ...base,
          topic,
          error: new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', `${topic.name} has no partition ${partition}`),
        };
      return { ...base, topic };
    });
  });
}

/** One acknowledged offset of a request, by `partitionKey`. */
interface OffsetAck {
  key: string;
  partition: number;
  offset: number;
  type: ShareAck['type'];
}

/**
 * The request's acknowledgement batches as offsets, checked before the share session moves
 * (INVALID_REQUEST for a malformed batch or a type the version does not have: 4, renew, is v2's).
 * Type 0 is a gap (no record at those offsets): nothing to apply.
 */
function parseAcks(topics: RequestTopic[], version: number): OffsetAck[] {
  const out: OffsetAck[] = [];
  for (const t of topics)
    for (const p of t.partitions) {
      const key = partitionKey({ topicId: topicIdString(t.topicId), partition: p.partitionIndex });
      for (const b of p.acknowledgementBatches) {
        const span = b.lastOffset - b.firstOffset + 1;
        const types = b.acknowledgeTypes;
        if (span < 1 || b.firstOffset < 0 || (types.length !== 1 && types.length !== span))
          throw new KafkaError(
            'INVALID_REQUEST',
            `Acknowledgement batch ${b.firstOffset}-${b.lastOffset} is malformed`,
          );
        if (out.length + span > MAX_ACKNOWLEDGED_OFFSETS)
          throw new KafkaError('INVALID_REQUEST', `More than ${MAX_ACKNOWLEDGED_OFFSETS} offsets acknowledged at once`);
        for (let i = 0; i < span; i++) {
          const code = types.length === 1 ? types[0]! : types[i]!;
          const type = ACKNOWLEDGE_TYPES[code];
          if (type === undefined || (type === 'renew' && version < 2))
            throw new KafkaError('INVALID_REQUEST', `Acknowledge type ${code} is not valid in version ${version}`);
          if (type !== 'gap') out.push({ key, partition: p.partitionIndex, offset: b.firstOffset + i, type });
        }
      }
    }
  return out;
}

/**
 * Applies the acknowledgements (READ on each topic); per partition the first error among its
 * acknowledgements, keyed as `partitionKey`.
 */
async function acknowledgeAll(
  ctx: RequestContext,
  group: string,
  member: string,
  targets: Target[],
  offsets: OffsetAck[],
): Promise<Map<string, KafkaError>> {
  const errors = new Map<string, KafkaError>();
  if (offsets.length === 0) return errors;
  const byKey = new Map(targets.map((t) => [partitionKey(t), t]));
  const denied = await deniedAmong(
    ctx,
    'READ',
    'TOPIC',
    targets.flatMap((t) => (t.topic ? [t.topic.name] : [])),
  );
  const applied = offsets.filter((o) => {
    const t = byKey.get(o.key)!;
    const refused = t.error ?? denied.get(t.topic!.name);
    if (refused) errors.set(o.key, refused);
    return !refused;
  });
  if (applied.length === 0) return errors;
  const acks: ShareAck[] = applied.map((o) => ({
    topic: byKey.get(o.key)!.topic!.name,
    partition: o.partition,
    offset: o.offset,
    type: o.type,
  }));
  const results = await ctx.services.share.acknowledge(group, member, acks);
  results.forEach((name: KafkaErrorName | undefined, i) => {
    const key = applied[i]!.key;
    if (name && !errors.has(key))
      errors.set(key, new KafkaError(name, `Acknowledgement of offset ${acks[i]!.offset} failed: ${name}`));
  });
  return errors;
}

interface Acquired {
  records: AcquiredRecord[];
  /** Per `partitionKey`: why the partition gave nothing. */
  errors: Map<string, unknown>;
}

/**
 * Records acquired from the session's share-partitions, starting at a random one so that members
 * spread over them, until `maxRecords` or about `maxBytes`. A share-partition others are writing
 * right now is left to the next fetch; other failures are that partition's error.
 */
async function acquireAll(
  ctx: RequestContext,
  group: string,
  member: string,
  targets: Target[],
  maxRecords: number,
  maxBytes: number,
): Promise<Acquired> {
  const { share } = ctx.services;
  const config = await share.config(group);
  const records: AcquiredRecord[] = [];
  const errors = new Map<string, unknown>();
  const denied = await deniedAmong(
    ctx,
    'READ',
    'TOPIC',
    targets.map((t) => t.topic!.name),
  );
  const start = Math.floor(Math.random() * targets.length);
  let bytes = 0;
  for (let i = 0; i < targets.length && records.length < maxRecords && bytes < maxBytes; i++) {
    const t = targets[(start + i) % targets.length]!;
    const refused = denied.get(t.topic!.name);
    if (refused) {
      errors.set(partitionKey(t), refused);
      continue;
    }
    try {
      const got = await share.acquireFrom(group, t.topic!, t.partition, member, maxRecords - records.length, config);
      for (const r of got) bytes += (r.record.key?.byteLength ?? 0) + (r.record.value?.byteLength ?? 0);
      records.push(...got);
    } catch (e) {
      if (isKafkaError(e, 'COORDINATOR_NOT_AVAILABLE')) continue;
      errors.set(partitionKey(t), e);
    }
  }
  return { records, errors };
}

/**
 * A partition's acquired records as Kafka answers them: record batches (one per run of consecutive
 * offsets, re-encoded uncompressed) and the acquired ranges, one per run of consecutive offsets
 * with the same delivery count.
 */
function encodeAcquired(got: AcquiredRecord[]): Pick<PartitionAnswer, 'records' | 'acquiredRecords'> {
  const sorted = [...got].sort((a, b) => a.record.offset - b.record.offset);
  const batches: Uint8Array[] = [];
  const ranges: PartitionAnswer['acquiredRecords'] = [];
  let run: AcquiredRecord[] = [];
  const flush = () => {
    if (run.length === 0) return;
    batches.push(
      encodeRecordBatch(
        run.map((r) => r.record),
        { baseOffset: run[0]!.record.offset },
      ),
    );
    run = [];
  };
  for (const r of sorted) {
    const last = run[run.length - 1];
    if (last && r.record.offset !== last.record.offset + 1) flush();
    run.push(r);
    const range = ranges[ranges.length - 1];
    if (range && range.lastOffset === r.record.offset - 1 && range.deliveryCount === r.deliveries)
      range.lastOffset = r.record.offset;
    else ranges.push({ firstOffset: r.record.offset, lastOffset: r.record.offset, deliveryCount: r.deliveries });
  }
  flush();
  return { records: Buffer.concat(batches), acquiredRecords: ranges };
}

const emptyAnswer = (partition: number): PartitionAnswer => ({
  partitionIndex: partition,
  errorCode: 0,
  errorMessage: null,
  acknowledgeErrorCode: 0,
  acknowledgeErrorMessage: null,
  currentLeader: NO_LEADER,
  records: null,
  acquiredRecords: [],
});

/**
 * A ShareFetch with MaxWaitMs, as an HTTP receive waits: in the fetch purgatory, looking again at
 * once on this process's appends to the share-partitions' partitions and its writes that make
 * records of the group acquirable (shareWatchKey), else on the purgatory's back-off (other
 * processes' appends and releases, locks that end). The last look's records are the answer, also
 * when the wait ends (timeout, or the connection closed) with a look under way.
 */
async function lookUntilAcquired(
  ctx: RequestContext,
  group: string,
  targets: Target[],
  waitMs: number,
  look: () => Promise<Acquired>,
): Promise<Acquired> {
  const { share, fetchPurgatory } = ctx.services;
  share.wakeWaitersIn(fetchPurgatory);
  let acquired: Acquired = { records: [], errors: new Map() };
  let looking = Promise.resolve();
  await fetchPurgatory
    .awaitCondition({
      keys: [shareWatchKey(group), ...targets.map((t) => partitionWatchKey(t.topic!.name, t.partition))],
      timeoutMs: waitMs,
      signal: ctx.signal,
      check: () => {
        looking = look().then((a) => {
          acquired = a;
        });
        return looking.then(() => acquired.records.length > 0);
      },
    })
    .catch((e: unknown) => {
      // The connection closed: nobody reads the answer (its session's records are released).
      if (!ctx.signal.aborted) throw e;
    });
  await looking;
  return acquired;
}
