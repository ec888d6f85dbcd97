/**
 * OffsetCommit, OffsetFetch and OffsetDelete on the groups' committed-offset items, the ones the
 * HTTP API reads and writes: a commit over Kafka is seen over HTTP and the reverse.
 */
import { isKafkaError, KafkaError } from '../../wire/errors.js';
import { MAX_OFFSET_METADATA_BYTES, type OffsetRecord } from '../../groups/offsets.js';
import type { Topic } from '../../topics/topics.js';
import { allowedNames, authorize, deniedAmong } from './access.js';
import { errorCodeOf, type Handler, type RequestContext } from './context.js';

// biome-ignore lint/suspicious/noExplicitAny: decoded message bodies are typed by the message definitions at run time
type Body = any;

type CommitPartition = { partitionIndex: number; committedOffset: number; committedMetadata: string | null };

/**
 * Whose commit this is: a classic member (or none, generation -1), checked by the classic
 * coordinator, or a KIP-848 member of the HTTP API's coordinator, which commits with its member
 * epoch from v9 (Kafka answers an older version UNSUPPORTED_VERSION for such a member). The
 * classic group is read first, the KIP-848 group only for a member id the classic one lacks.
 */
type Committer = { kind: 'classic'; generation: number } | { kind: 'consumer'; memberId: string; memberEpoch: number };

async function committerOf(ctx: RequestContext, req: Body, version: number): Promise<Committer> {
  const memberId = req.memberId as string;
  let generation: number;
  try {
    generation = await ctx.classic.checkCommit(
      req.groupId,
      memberId,
      req.generationIdOrMemberEpoch,
      req.groupInstanceId ?? null,
    );
  } catch (e) {
    if (memberId === '' || !isKafkaError(e, 'UNKNOWN_MEMBER_ID')) throw e;
    const snap = await ctx.services.groups.coordinator.find(req.groupId);
    if (!snap?.group.members[memberId]) throw e;
    if (version < 9)
      throw new KafkaError(
        'UNSUPPORTED_VERSION',
        'OffsetCommit version 9 or above must be used by members using the consumer group protocol',
      );
    return { kind: 'consumer', memberId, memberEpoch: req.generationIdOrMemberEpoch };
  }
  // A commit without a member: the HTTP API's group may not have members either (and is created,
  // so HTTP sees the offsets). Kafka answers one to a group with members UNKNOWN_MEMBER_ID.
  if (generation < 0)
    await ctx.services.groups.offsets
      .requireInactive(req.groupId, 'Offsets can be committed without a member id')
      .catch((e: unknown) => {
        if (!isKafkaError(e, 'NON_EMPTY_GROUP')) throw e;
        throw new KafkaError('UNKNOWN_MEMBER_ID', `Group ${req.groupId} has members: commit as one of them`);
      });
  return { kind: 'classic', generation };
}

export const offsetCommit: Handler = async (ctx, req, version) => {
  const topicsIn = req.topics as { name: string; partitions: CommitPartition[] }[];
  const all = (code: number) => ({
    throttleTimeMs: 0,
    topics: topicsIn.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code })),
    })),
  });
  let committer: Committer;
  let deniedTopics: Map<string, KafkaError>;
  try {
    await authorize(ctx, 'READ', 'GROUP', req.groupId);
    deniedTopics = await deniedAmong(
      ctx,
      'READ',
      'TOPIC',
      topicsIn.map((t) => t.name),
    );
    committer = await committerOf(ctx, req, version);
  } catch (e) {
    return all(errorCodeOf(ctx, e));
  }
  const now = ctx.services.clock.now();
  const records: OffsetRecord[] = [];
  const errors = new Map<string, number>();
  await Promise.all(
    topicsIn.map(async (t) => {
      let topic: Topic | undefined;
      let topicError: unknown;
      try {
        const refused = deniedTopics.get(t.name);
        if (refused) throw refused;
        topic = await ctx.services.topics.get(t.name);
      } catch (e) {
        topicError = e;
      }
      for (const p of t.partitions) {
        try {
          if (!topic) throw topicError;
          if (p.partitionIndex < 0 || p.partitionIndex >= topic.partitionCount)
            throw new KafkaError(
              'UNKNOWN_TOPIC_OR_PARTITION',
              `Partition ${p.partitionIndex} of ${t.name} does not exist`,
            );
          if (Buffer.byteLength(p.committedMetadata ?? '') > MAX_OFFSET_METADATA_BYTES)
            throw new KafkaError('OFFSET_METADATA_TOO_LARGE', 'Offset metadata too large');
          records.push({
            topic: t.name,
            partition: p.partitionIndex,
            topicId: topic.id,
            offset: p.committedOffset,
            metadata: p.committedMetadata ?? '',
            generation: committer.kind === 'classic' ? committer.generation : committer.memberEpoch,
            commitTimestamp: now,
          });
        } catch (e) {
          errors.set(`${t.name}#${p.partitionIndex}`, errorCodeOf(ctx, e));
        }
      }
    }),
  );
  // Each partition's outcome is its own, as Kafka answers: one whose write failed gets its error,
  // the ones written NONE. What fails the whole commit (the member's epoch) is every partition's.
  try {
    const written =
      committer.kind === 'classic'
        ? await ctx.services.groups.offsets.writeEach(req.groupId, records)
        : // The KIP-848 commit is the HTTP API's: fenced by the group item, for partitions the member holds.
          records.length === 0
          ? []
          : await ctx.services.groups.offsets.commitEach(req.groupId, {
              memberId: committer.memberId,
              generation: committer.memberEpoch,
              staleEpoch: 'STALE_MEMBER_EPOCH',
              offsets: records.map((r) => ({
                topic: r.topic,
                partition: r.partition,
                offset: r.offset,
                metadata: r.metadata,
              })),
            });
    written.forEach((w, i) => {
      const r = records[i]!;
      if (w.status === 'rejected') errors.set(`${r.topic}#${r.partition}`, errorCodeOf(ctx, w.reason));
    });
  } catch (e) {
    const code = errorCodeOf(ctx, e);
    for (const r of records) errors.set(`${r.topic}#${r.partition}`, code);
  }
  return {
    throttleTimeMs: 0,
    topics: topicsIn.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        errorCode: errors.get(`${t.name}#${p.partitionIndex}`) ?? 0,
      })),
    })),
  };
};

type FetchTopics = { name: string; partitionIndexes: number[] }[] | null;

/**
 * One group's committed offsets, as OffsetFetch answers them (up to v7 the whole answer, from v8
 * one of its groups). With requireStable (KIP-447, v7+), a partition whose offset waits in a
 * transaction not yet complete is answered UNSTABLE_OFFSET_COMMIT, and the consumer retries.
 */
async function fetchGroupOffsets(
  ctx: RequestContext,
  groupId: string,
  topicsIn: FetchTopics,
  member: { memberId: string | null; memberEpoch: number },
  requireStable: boolean,
) {
  try {
    await authorize(ctx, 'DESCRIBE', 'GROUP', groupId);
    await checkFetchingMember(ctx, groupId, member.memberId, member.memberEpoch);
    const committed = await ctx.services.groups.offsets.committed(groupId);
    const unstable = requireStable ? await ctx.services.transactions.unstableOffsets(groupId) : undefined;
    const unstableCode = new KafkaError('UNSTABLE_OFFSET_COMMIT', '').code;
    const byKey = new Map(committed.map((r) => [`${r.topic}#${r.partition}`, r]));
    // DESCRIBE per topic: all of the group's offsets lists the allowed topics; a named one denied says so.
    const mayDescribe = await allowedNames(ctx, 'DESCRIBE', 'TOPIC');
    const deniedCode = new KafkaError('TOPIC_AUTHORIZATION_FAILED', '').code;
    const wanted: { name: string; partitionIndexes: number[] }[] =
      topicsIn === null
        ? [...new Set(committed.map((r) => r.topic))].filter(mayDescribe).map((name) => ({
            name,
            partitionIndexes: committed.filter((r) => r.topic === name).map((r) => r.partition),
          }))
        : topicsIn;
    const topics = wanted.map((t) => ({
      name: t.name,
      partitions: t.partitionIndexes.map((p) => {
        if (!mayDescribe(t.name))
          return {
            partitionIndex: p,
            committedOffset: -1,
            committedLeaderEpoch: -1,
            metadata: '',
            errorCode: deniedCode,
          };
        if (unstable?.has(`${t.name}#${p}`))
          return {
            partitionIndex: p,
            committedOffset: -1,
            committedLeaderEpoch: -1,
            metadata: '',
            errorCode: unstableCode,
          };
        const r = byKey.get(`${t.name}#${p}`);
        return {
          partitionIndex: p,
          committedOffset: r ? r.offset : -1,
          committedLeaderEpoch: -1,
          metadata: r ? r.metadata : '',
          errorCode: 0,
        };
      }),
    }));
    return { topics, errorCode: 0 };
  } catch (e) {
    return { topics: [], errorCode: errorCodeOf(ctx, e) };
  }
}

/**
 * OffsetFetch v9's member check (KIP-848): a fetch naming a member (or an epoch) must come from a
 * member of the group at its current epoch: UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH. Kafka does not
 * check classic members here, and a group that does not exist has no offsets to protect.
 */
async function checkFetchingMember(
  ctx: RequestContext,
  groupId: string,
  memberId: string | null,
  memberEpoch: number,
): Promise<void> {
  if (memberId === null && memberEpoch < 0) return;
  const classic = await ctx.classic.describe(groupId);
  if (classic && Object.keys(classic.members).length > 0) return;
  const snap = await ctx.services.groups.coordinator.find(groupId);
  if (!snap) return;
  const m = snap.group.members[memberId ?? ''];
  if (!m) throw new KafkaError('UNKNOWN_MEMBER_ID', `Member ${memberId} is not in group ${groupId}`);
  if (m.memberEpoch !== memberEpoch)
    throw new KafkaError(
      'STALE_MEMBER_EPOCH',
      `Epoch ${memberEpoch} of member ${memberId} is stale: the member is at epoch ${m.memberEpoch}`,
    );
}

export const offsetFetch: Handler = async (ctx, req, version) => {
  if (version < 8) {
    const one = await fetchGroupOffsets(
      ctx,
      req.groupId,
      req.topics,
      { memberId: null, memberEpoch: -1 },
      version >= 7 && req.requireStable === true,
    );
    return { throttleTimeMs: 0, ...one };
  }
  const groupsIn = req.groups as {
    groupId: string;
    memberId: string | null;
    memberEpoch: number;
    topics: FetchTopics;
  }[];
  const groups = await Promise.all(
    groupsIn.map(async (g) => ({
      groupId: g.groupId,
      ...(await fetchGroupOffsets(ctx, g.groupId, g.topics, g, req.requireStable === true)),
    })),
  );
  return { throttleTimeMs: 0, groups };
};

export const offsetDelete: Handler = async (ctx, req) => {
  const topicsIn = req.topics as { name: string; partitions: { partitionIndex: number }[] }[];
  try {
    await authorize(ctx, 'DELETE', 'GROUP', req.groupId);
    const deniedTopics = await deniedAmong(
      ctx,
      'READ',
      'TOPIC',
      topicsIn.map((t) => t.name),
    );
    const subscribed = await subscribedTopics(ctx, req.groupId);
    const topics = await Promise.all(
      topicsIn.map(async (t) => ({
        name: t.name,
        partitions: await Promise.all(
          t.partitions.map(async (p) => {
            const refused = deniedTopics.get(t.name);
            if (refused) return { partitionIndex: p.partitionIndex, errorCode: refused.code };
            if (subscribed.has(t.name))
              return {
                partitionIndex: p.partitionIndex,
                errorCode: new KafkaError('GROUP_SUBSCRIBED_TO_TOPIC', '').code,
              };
            await ctx.services.groups.offsets.delete(req.groupId, t.name, p.partitionIndex);
            return { partitionIndex: p.partitionIndex, errorCode: 0 };
          }),
        ),
      })),
    );
    return { errorCode: 0, throttleTimeMs: 0, topics };
  } catch (e) {
    return { errorCode: errorCodeOf(ctx, e), throttleTimeMs: 0, topics: [] };
  }
};

/** Topics the group's members subscribe to: KIP-848 subscriptions, and classic members' "consumer" metadata. */
async function subscribedTopics(ctx: RequestContext, groupId: string): Promise<Set<string>> {
  const out = new Set<string>();
  const snap = await ctx.services.groups.coordinator.find(groupId);
  for (const m of Object.values(snap?.group.members ?? {})) for (const t of m.subscribedTopics) out.add(t);
  const classic = await ctx.classic.describe(groupId);
  for (const m of Object.values(classic?.members ?? {})) {
    if (m.protocolType !== 'consumer') continue;
    for (const p of m.protocols) for (const t of subscriptionTopics(Buffer.from(p.metadata, 'base64'))) out.add(t);
  }
  return out;
}

/** The topics of a ConsumerProtocolSubscription (version int16, then an array of strings). */
function subscriptionTopics(b: Buffer): string[] {
  try {
    const n = b.readInt32BE(2);
    const out: string[] = [];
    let at = 6;
    for (let i = 0; i < n; i++) {
      const len = b.readInt16BE(at);
      out.push(b.toString('utf8', at + 2, at + 2 + len));
      at += 2 + len;
    }
    return out;
  } catch {
    return [];
  }
}
