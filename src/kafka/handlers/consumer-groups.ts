/**
 * KIP-848's ConsumerGroupHeartbeat on the group coordinator the HTTP API's consumers use
 * (src/groups/coordinator.ts): the server assigns, and the member learns its partitions in the
 * heartbeat's answer. Topics are named by id on the wire (Metadata v10+ gives the ids); the
 * coordinator works by name. READ on the group and DESCRIBE on every subscribed topic, as Kafka.
 * A static member's instance id and its rack are accepted and not used (static membership is the
 * classic protocol's only: classic-coordinator.ts).
 */
import { assignmentOf } from '../../groups/assignment.js';
import { parseAssignorName } from '../../groups/assignors.js';
import { isKafkaError } from '../../wire/errors.js';
import { authorize, deniedAmong } from './access.js';
import { type Handler, heartbeatFailed } from './context.js';
import { topicIdBytes, topicIdString } from './topic-ids.js';

type TopicIdPartitions = { topicId: Uint8Array; partitions: number[] };

export const consumerGroupHeartbeat: Handler = async (ctx, req) => {
  try {
    await authorize(ctx, 'READ', 'GROUP', req.groupId);
    const subscribed = req.subscribedTopicNames as string[] | null;
    if (subscribed) {
      const refused = await deniedAmong(ctx, 'DESCRIBE', 'TOPIC', subscribed);
      const first = refused.values().next();
      if (!first.done) throw first.value;
    }
    const registry = ctx.services.topics;
    const owned = req.topicPartitions as TopicIdPartitions[] | null;
    // From the topic cache, as every heartbeat asks: no listing of all topics per heartbeat.
    const byId = owned ? await registry.getByIds(owned.map((tp) => topicIdString(tp.topicId))) : new Map();
    const a = await ctx.services.groups.coordinator.heartbeat(req.groupId, {
      memberId: req.memberId,
      memberEpoch: req.memberEpoch,
      clientId: ctx.clientId,
      ...(subscribed === null ? {} : { subscribedTopics: subscribed }),
      ...(req.serverAssignor === null ? {} : { assignor: parseAssignorName(req.serverAssignor) }),
      ...(req.rebalanceTimeoutMs > 0 ? { rebalanceTimeoutMs: req.rebalanceTimeoutMs } : {}),
      // Partitions of a topic id this server does not know are not the member's to own.
      ...(owned === null
        ? {}
        : {
            ownedPartitions: assignmentOf(
              owned.flatMap((tp) => {
                const topic = byId.get(topicIdString(tp.topicId));
                return topic ? tp.partitions.map((partition) => ({ topic: topic.name, partition })) : [];
              }),
            ),
          }),
    });
    const idOf = new Map<string, string>();
    for (const name of Object.keys(a.assignment)) {
      // A topic deleted since is no longer assigned.
      const topic = await registry.get(name).catch((e: unknown) => {
        if (isKafkaError(e, 'UNKNOWN_TOPIC_OR_PARTITION')) return undefined;
        throw e;
      });
      if (topic) idOf.set(name, topic.id);
    }
    return {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      memberId: a.memberId,
      memberEpoch: a.memberEpoch,
      heartbeatIntervalMs: a.heartbeatIntervalMs,
      // A member that left has no assignment; otherwise the whole current one, each time.
      assignment:
        a.memberEpoch < 0
          ? null
          : {
              topicPartitions: Object.entries(a.assignment)
                .filter(([name]) => idOf.has(name))
                .map(([name, partitions]) => ({ topicId: topicIdBytes(idOf.get(name)!), partitions })),
            },
    };
  } catch (e) {
    return heartbeatFailed(ctx, e);
  }
};
