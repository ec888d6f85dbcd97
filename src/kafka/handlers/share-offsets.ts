/**
 * The share groups' admin RPCs on the same ShareGroups as the HTTP offset routes (src/share):
 * DescribeShareGroupOffsets on `describe`, AlterShareGroupOffsets on `alterOffsets`,
 * DeleteShareGroupOffsets on `deleteOffsets`. Authorization and answers as Kafka's KafkaApis and
 * group coordinator give them: DESCRIBE on the group and its topics to describe, READ on the group
 * and topics to alter, DELETE on the group and READ on the topics to delete; a group-wide refusal
 * (GROUP_AUTHORIZATION_FAILED, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP) is the answer's top-level
 * error with no topics, and a topic's refusal is its own.
 */
import type { SharePartitionView } from '../../share/share-groups.js';
import type { Topic } from '../../topics/topics.js';
import { ERRORS, KafkaError, isKafkaError, type KafkaErrorName } from '../../wire/errors.js';
import { allowedNames, authorize, deniedAmong } from './access.js';
import { errorCodeOf, errorMessageOf, type Handler, type RequestContext } from './context.js';
import { topicIdBytes, ZERO_UUID } from './topic-ids.js';

/** Kafka's start offset of a share-partition the group has no state for. */
const UNINITIALIZED = -1;

const failure = (name: KafkaErrorName, message: string | null = null) => ({
  errorCode: ERRORS[name].code,
  errorMessage: message,
});
const ok = { errorCode: 0, errorMessage: null };

/** The topic by name, or undefined when there is none. */
async function topicOrNone(ctx: RequestContext, name: string): Promise<Topic | undefined> {
  return ctx.services.topics.get(name).catch((e: unknown) => {
    if (isKafkaError(e, 'UNKNOWN_TOPIC_OR_PARTITION')) return undefined;
    throw e;
  });
}

/** The group's share-partition state; none for a group never used (Kafka answers it as absent data, not an error). */
async function statesOf(ctx: RequestContext, group: string): Promise<SharePartitionView[]> {
  return ctx.services.share.describe(group).catch((e: unknown) => {
    if (isKafkaError(e, 'GROUP_ID_NOT_FOUND')) return [];
    throw e;
  });
}

interface DescribeGroupRequest {
  groupId: string;
  topics: { topicName: string; partitions: number[] }[] | null;
}

/**
 * Per group: each share-partition's start offset (SPSO), leader epoch and (v1) lag. A partition
 * the group has no state for, of a topic that may not even exist, is StartOffset -1 without an
 * error, as Kafka answers it. Topics null: every share-partition with state, the topics the
 * connection may not DESCRIBE left out; named topics it may not DESCRIBE are
 * TOPIC_AUTHORIZATION_FAILED per partition.
 */
export const describeShareGroupOffsets: Handler = async (ctx, req) => {
  const groups = await Promise.all(
    (req.groups as DescribeGroupRequest[]).map(async ({ groupId, topics }) => {
      try {
        await authorize(ctx, 'DESCRIBE', 'GROUP', groupId);
        const views = await statesOf(ctx, groupId);
        const state = new Map(views.map((v) => [`${v.topic}\u0000${v.partition}`, v]));
        let wanted: { topicName: string; partitions: number[] }[];
        let denied: Map<string, KafkaError>;
        if (topics === null) {
          const mayDescribe = await allowedNames(ctx, 'DESCRIBE', 'TOPIC');
          const byTopic = new Map<string, number[]>();
          for (const v of views)
            if (mayDescribe(v.topic)) byTopic.set(v.topic, [...(byTopic.get(v.topic) ?? []), v.partition]);
          wanted = [...byTopic].map(([topicName, partitions]) => ({ topicName, partitions }));
          denied = new Map();
        } else {
          wanted = topics;
          denied = await deniedAmong(
            ctx,
            'DESCRIBE',
            'TOPIC',
            topics.map((t) => t.topicName),
          );
        }
        const answered = await Promise.all(
          wanted.map(async ({ topicName, partitions }) => {
            const refused = denied.get(topicName);
            const topic = refused ? undefined : await topicOrNone(ctx, topicName);
            return {
              topicName,
              topicId: topic ? topicIdBytes(topic.id) : ZERO_UUID,
              partitions: partitions.map((partitionIndex) => {
                // A refused topic says nothing of its state.
                const v = refused ? undefined : state.get(`${topicName}\u0000${partitionIndex}`);
                return {
                  partitionIndex,
                  startOffset: v?.startOffset ?? UNINITIALIZED,
                  leaderEpoch: v?.leaderEpoch ?? 0,
                  lag: v?.lag ?? -1,
                  ...(refused ? failure('TOPIC_AUTHORIZATION_FAILED', refused.message) : ok),
                };
              }),
            };
          }),
        );
        return { groupId, topics: answered, ...ok };
      } catch (e) {
        return { groupId, topics: [], errorCode: errorCodeOf(ctx, e), errorMessage: errorMessageOf(e) };
      }
    }),
  );
  return { throttleTimeMs: 0, groups };
};

interface AlterTopic {
  topicName: string;
  partitions: { partitionIndex: number; startOffset: number }[];
}

/**
 * Each share-partition starts afresh at its StartOffset (ShareGroups.alterOffsets: clamped into
 * the log's range, in-flight records forgotten, state epoch bumped). GROUP_ID_NOT_FOUND for a group
 * never used and NON_EMPTY_GROUP for one with members or locked records, for the whole request; a
 * topic the connection may not READ is TOPIC_AUTHORIZATION_FAILED, one that does not exist or a
 * partition past its count UNKNOWN_TOPIC_OR_PARTITION, per partition.
 */
export const alterShareGroupOffsets: Handler = async (ctx, req) => {
  const group = req.groupId as string;
  try {
    await authorize(ctx, 'READ', 'GROUP', group);
    if (group === '') throw new KafkaError('INVALID_GROUP_ID', 'The group id is empty');
    const topics = req.topics as AlterTopic[];
    const denied = await deniedAmong(
      ctx,
      'READ',
      'TOPIC',
      topics.map((t) => t.topicName),
    );
    const known = new Map<string, Topic | undefined>();
    for (const t of topics) if (!denied.has(t.topicName)) known.set(t.topicName, await topicOrNone(ctx, t.topicName));
    await ctx.services.share.requireGroup(group);
    const entries = topics.flatMap((t) =>
      known.get(t.topicName)
        ? t.partitions.map((p) => ({ topic: t.topicName, partition: p.partitionIndex, offset: p.startOffset }))
        : [],
    );
    const changes = await ctx.services.share.alterOffsets(group, entries);
    const errorOf = new Map(changes.map((c) => [`${c.topic}\u0000${c.partition}`, c.error]));
    const responses = topics.map((t) => {
      const topic = known.get(t.topicName);
      const refused = denied.get(t.topicName);
      return {
        topicName: t.topicName,
        topicId: topic ? topicIdBytes(topic.id) : ZERO_UUID,
        partitions: t.partitions.map(({ partitionIndex }) => {
          if (refused) return { partitionIndex, ...failure('TOPIC_AUTHORIZATION_FAILED', refused.message) };
          if (!topic)
            return { partitionIndex, ...failure('UNKNOWN_TOPIC_OR_PARTITION', `Topic ${t.topicName} does not exist`) };
          const error = errorOf.get(`${t.topicName}\u0000${partitionIndex}`);
          return { partitionIndex, ...(error ? failure(error, `${t.topicName}-${partitionIndex}: ${error}`) : ok) };
        }),
      };
    });
    return { throttleTimeMs: 0, ...ok, responses };
  } catch (e) {
    return { throttleTimeMs: 0, errorCode: errorCodeOf(ctx, e), errorMessage: errorMessageOf(e), responses: [] };
  }
};

/**
 * The group's state for each topic is removed (ShareGroups.deleteOffsets), so it starts again by
 * share.auto.offset.reset. GROUP_ID_NOT_FOUND and NON_EMPTY_GROUP for the whole request; per topic
 * TOPIC_AUTHORIZATION_FAILED without READ on it, UNKNOWN_TOPIC_OR_PARTITION when it does not
 * exist or the group has no state for it.
 */
export const deleteShareGroupOffsets: Handler = async (ctx, req) => {
  const group = req.groupId as string;
  try {
    await authorize(ctx, 'DELETE', 'GROUP', group);
    if (group === '') throw new KafkaError('INVALID_GROUP_ID', 'The group id is empty');
    const names = (req.topics as { topicName: string }[]).map((t) => t.topicName);
    const denied = await deniedAmong(ctx, 'READ', 'TOPIC', names);
    // GROUP_ID_NOT_FOUND for a group never used.
    const withState = new Set((await ctx.services.share.describe(group)).map((v) => v.topic));
    const topics = new Map<string, Topic | undefined>();
    for (const name of names) if (!denied.has(name)) topics.set(name, await topicOrNone(ctx, name));
    const deletable = names.filter((n) => topics.get(n) && withState.has(n));
    const results = await ctx.services.share.deleteOffsets(group, deletable);
    const resultOf = new Map(deletable.map((n, i) => [n, results[i]]));
    const responses = names.map((topicName) => {
      const topic = topics.get(topicName);
      const base = { topicName, topicId: topic ? topicIdBytes(topic.id) : ZERO_UUID };
      const refused = denied.get(topicName);
      if (refused) return { ...base, ...failure('TOPIC_AUTHORIZATION_FAILED', refused.message) };
      if (!topic) return { ...base, ...failure('UNKNOWN_TOPIC_OR_PARTITION', `Topic ${topicName} does not exist`) };
      if (!resultOf.has(topicName))
        return { ...base, ...failure('UNKNOWN_TOPIC_OR_PARTITION', 'There is no offset information to delete') };
      const error = resultOf.get(topicName);
      return { ...base, ...(error ? failure(error, `${topicName}: ${error}`) : ok) };
    });
    return { throttleTimeMs: 0, ...ok, responses };
  } catch (e) {
    return { throttleTimeMs: 0, errorCode: errorCodeOf(ctx, e), errorMessage: errorMessageOf(e), responses: [] };
  }
};
