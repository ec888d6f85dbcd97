/**
 * OffsetCommit, OffsetFetch and OffsetDelete on the groups' committed-offset items, the ones the
 * HTTP API reads and writes: a commit over Kafka is seen over HTTP and the reverse.
 */
import { KafkaError } from '../../wire/errors.js';
import { MAX_OFFSET_METADATA_BYTES, type OffsetRecord } from '../../groups/offsets.js';
import type { Topic } from '../../topics/topics.js';
import { allowedNames, authorize, deniedAmong } from './access.js';
import { errorCodeOf, type Handler, type RequestContext } from './context.js';

type CommitPartition = { partitionIndex: number; committedOffset: number; committedMetadata: string | null };

export const offsetCommit: Handler = async (ctx, req) => {
  const topicsIn = req.topics as { name: string; partitions: CommitPartition[] }[];
  const all = (code: number) => ({
    throttleTimeMs: 0,
    topics: topicsIn.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code })),
    })),
  });
  let generation: number;
  let deniedTopics: Map<string, KafkaError>;
  try {
    await authorize(ctx, 'READ', 'GROUP', req.groupId);
    deniedTopics = await deniedAmong(
      ctx,
      'READ',
      'TOPIC',
      topicsIn.map((t) => t.name),
    );
    generation = await ctx.classic.checkCommit(req.groupId, req.memberId, req.generationIdOrMemberEpoch);
    // A commit without a member: the HTTP API's group may not have members either (and is created, so HTTP sees the offsets).
    if (generation < 0)
      await ctx.services.groups.offsets.requireInactive(req.groupId, 'Offsets can be committed without a member id');
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
          if (p.committedOffset < 0) throw new KafkaError('INVALID_REQUEST', `Offset ${p.committedOffset} is negative`);
          if (Buffer.byteLength(p.committedMetadata ?? '') > MAX_OFFSET_METADATA_BYTES)
            throw new KafkaError('OFFSET_METADATA_TOO_LARGE', 'Offset metadata too large');
          records.push({
            topic: t.name,
            partition: p.partitionIndex,
            topicId: topic.id,
            offset: p.committedOffset,
            metadata: p.committedMetadata ?? '',
            generation,
            commitTimestamp: now,
          });
        } catch (e) {
          errors.set(`${t.name}#${p.partitionIndex}`, errorCodeOf(ctx, e));
        }
      }
    }),
  );
  try {
    await ctx.services.groups.offsets.write(req.groupId, records);
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

export const offsetFetch: Handler = async (ctx, req) => {
  try {
    await authorize(ctx, 'DESCRIBE', 'GROUP', req.groupId);
    const committed = await ctx.services.groups.offsets.committed(req.groupId);
    const byKey = new Map(committed.map((r) => [`${r.topic}#${r.partition}`, r]));
    // DESCRIBE per topic: all of the group's offsets lists the allowed topics; a named one denied says so.
    const mayDescribe = await allowedNames(ctx, 'DESCRIBE', 'TOPIC');
    const deniedCode = new KafkaError('TOPIC_AUTHORIZATION_FAILED', '').code;
    const wanted: { name: string; partitionIndexes: number[] }[] =
      req.topics === null
        ? [...new Set(committed.map((r) => r.topic))].filter(mayDescribe).map((name) => ({
            name,
            partitionIndexes: committed.filter((r) => r.topic === name).map((r) => r.partition),
          }))
        : req.topics;
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
    return { throttleTimeMs: 0, topics, errorCode: 0 };
  } catch (e) {
    return { throttleTimeMs: 0, topics: [], errorCode: errorCodeOf(ctx, e) };
  }
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
