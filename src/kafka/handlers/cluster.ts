/** ApiVersions, Metadata and DescribeCluster. */
import { KafkaError, isKafkaError } from '../../wire/errors.js';
import type { Topic } from '../../topics/topics.js';
import { mapBounded, partitionsOf } from '../../topics/partition-scan.js';
import { parseVersions } from '../protocol/schema.js';
import { APIS } from '../protocol/messages/index.js';
import { allowed, allowedNames, denied } from './access.js';
import { byTopicId, topicIdBytes, topicIdString, ZERO_UUID } from './topic-ids.js';
import { errorCodeOf, type Handler, type RequestContext } from './context.js';

/** The versions this listener speaks: exactly those of the definitions (ApiVersions tells the truth). */
export const supportedApiKeys = () =>
  APIS.map((a) => {
    const { min, max } = parseVersions(a.request.validVersions);
    return { apiKey: a.apiKey, minVersion: min, maxVersion: max };
  }).sort((a, b) => a.apiKey - b.apiKey);

export const apiVersions: Handler = async () => ({ errorCode: 0, apiKeys: supportedApiKeys(), throttleTimeMs: 0 });

export const metadata: Handler = async (ctx, req, version) => {
  const { topics: registry, log } = ctx.services;
  // v0: an empty list means every topic; v1+: null means every topic, empty means none.
  const all = req.topics === null || (version === 0 && req.topics.length === 0);
  // DESCRIBE per topic: every topic lists only those allowed; a named one denied says so, whether it exists or not.
  const mayDescribe = await allowedNames(ctx, 'DESCRIBE', 'TOPIC');
  // v10+: a topic may be named by id (its name null); an unknown id is UNKNOWN_TOPIC_ID.
  const byId =
    !all && req.topics.some((t: { name: string | null }) => t.name === null)
      ? byTopicId(await registry.list())
      : undefined;
  type Wanted = { name: string | null; topicId?: Uint8Array; topic?: Topic; error?: unknown };
  const found: Wanted[] = all
    ? (await registry.list()).filter((t) => mayDescribe(t.name)).map((t) => ({ name: t.name, topic: t }))
    : await Promise.all(
        req.topics.map(({ name, topicId }: { name: string | null; topicId: Uint8Array }): Promise<Wanted> => {
          if (name === null) {
            const topic = byId!.get(topicIdString(topicId));
            if (!topic || !mayDescribe(topic.name))
              return Promise.resolve({
                name: null,
                topicId,
                error: new KafkaError('UNKNOWN_TOPIC_ID', 'This server does not host this topic ID'),
              });
            return Promise.resolve({ name: topic.name, topic });
          }
          return (
            mayDescribe(name)
              ? topicFor(ctx, name, req.allowAutoTopicCreation)
              : Promise.reject(denied(ctx, 'DESCRIBE', 'TOPIC', name))
          ).then(
            (topic) => ({ name, topic }),
            (error: unknown) => ({ name, error }),
          );
        }),
      );
  // Every partition's state, a bounded number at a time: a Metadata over 10,000 partitions must
  // not open 10,000 reads at once.
  const wanted = found.flatMap(({ topic }) => (topic ? partitionsOf(topic) : []));
  const states = await mapBounded(wanted, ({ topic, partition }) =>
    log.state(topic, partition).then(
      (s) => ({ errorCode: s.isr.length === 0 ? 5 : 0, leaderEpoch: s.leaderEpoch }),
      (e: unknown) => ({ errorCode: errorCodeOf(ctx, e), leaderEpoch: -1 }),
    ),
  );
  let next = 0;
  const topics = found.map(({ name, topicId, topic, error }) => {
    if (!topic)
      return {
        errorCode: errorCodeOf(ctx, error),
        name: name ?? (version >= 12 ? null : ''), // a null name is only written from v12
        topicId: topicId ?? ZERO_UUID,
        isInternal: false,
        partitions: [],
      };
    const partitions = partitionsOf(topic).map(({ partition }) => ({
      partitionIndex: partition,
      leaderId: ctx.broker.nodeId,
      replicaNodes: [ctx.broker.nodeId],
      isrNodes: [ctx.broker.nodeId],
      offlineReplicas: [],
      ...states[next++]!,
    }));
    return {
      errorCode: 0,
      name,
      topicId: topicIdBytes(topic.id),
      isInternal: false,
      partitions,
      topicAuthorizedOperations: -2147483648,
    };
  });
  return {
    throttleTimeMs: 0,
    brokers: [{ nodeId: ctx.broker.nodeId, host: ctx.broker.host, port: ctx.broker.port, rack: null }],
    clusterId: ctx.services.clusterId,
    controllerId: ctx.broker.nodeId,
    topics,
  };
};

export const describeCluster: Handler = async (ctx) => ({
  throttleTimeMs: 0,
  errorCode: 0,
  errorMessage: null,
  clusterId: ctx.services.clusterId,
  controllerId: ctx.broker.nodeId,
  brokers: [{ brokerId: ctx.broker.nodeId, host: ctx.broker.host, port: ctx.broker.port, rack: null }],
  clusterAuthorizedOperations: -2147483648,
});

/** Kafka's auto.create.topics.enable: a Metadata request may create a topic it names, with the defaults. */
async function topicFor(ctx: RequestContext, name: string, allowAutoCreate: boolean): Promise<Topic> {
  try {
    return await ctx.services.topics.get(name);
  } catch (e) {
    if (!allowAutoCreate || !ctx.autoCreateTopics || !isKafkaError(e, 'UNKNOWN_TOPIC_OR_PARTITION')) throw e;
    // As CreateTopics: CREATE on the cluster or on the topic; without it the topic stays unknown.
    if (!(await allowed(ctx, 'CREATE', 'CLUSTER')) && !(await allowed(ctx, 'CREATE', 'TOPIC', name))) throw e;
    const { partitions, replicationFactor } = ctx.services.defaults;
    return ctx.services.topics.create({ name, partitionCount: partitions, replicationFactor }).catch((err: unknown) => {
      if (isKafkaError(err, 'TOPIC_ALREADY_EXISTS')) return ctx.services.topics.get(name);
      throw err;
    });
  }
}
