/** CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs. */
import { describedTopicConfigNames, TOPIC_CONFIG_DEFS } from '../../config/topic-configs.js';
import { KafkaError } from '../../wire/errors.js';
import { allowed, authorize } from './access.js';
import { errorCodeOf, errorMessageOf, type Handler, type RequestContext } from './context.js';

/** Kafka's resource types: 2 = topic, 4 = broker, 32 = group (KIP-848's group configs). */
const TOPIC = 2;
const BROKER = 4;
const GROUP = 32;
/**
 * Kafka's config sources: 1 = topic override, 4 = the broker's static configuration, 5 = default,
 * 8 = a group's override.
 */
const DYNAMIC_TOPIC_CONFIG = 1;
const STATIC_BROKER_CONFIG = 4;
const DEFAULT_CONFIG = 5;
const DYNAMIC_GROUP_CONFIG = 8;

export const createTopics: Handler = async (ctx, req) => {
  const topics = await Promise.all(
    req.topics.map(
      async (t: {
        name: string;
        numPartitions: number;
        replicationFactor: number;
        assignments: unknown[];
        configs: { name: string; value: string | null }[];
      }) => {
        try {
          // CREATE on the cluster, or on the topic (Kafka's CreateTopics).
          if (!(await allowed(ctx, 'CREATE', 'CLUSTER'))) await authorize(ctx, 'CREATE', 'TOPIC', t.name);
          if (t.assignments.length > 0)
            throw new KafkaError(
              'INVALID_REPLICA_ASSIGNMENT',
              'Replica assignments are not supported: replicas are placed by the server',
            );
          const configs = Object.fromEntries(t.configs.filter((c) => c.value !== null).map((c) => [c.name, c.value!]));
          const topic = await ctx.services.topics.create({
            name: t.name,
            partitionCount: t.numPartitions === -1 ? ctx.services.defaults.partitions : t.numPartitions,
            replicationFactor:
              t.replicationFactor === -1 ? ctx.services.defaults.replicationFactor : t.replicationFactor,
            configs,
            validateOnly: req.validateOnly,
          });
          return {
            name: t.name,
            errorCode: 0,
            errorMessage: null,
            numPartitions: topic.partitionCount,
            replicationFactor: topic.replicationFactor,
            configs: describeTopicConfigs(topic.configs),
          };
        } catch (e) {
          return {
            name: t.name,
            errorCode: errorCodeOf(ctx, e),
            errorMessage: errorMessageOf(e),
            numPartitions: -1,
            replicationFactor: -1,
            configs: null,
          };
        }
      },
    ),
  );
  return { throttleTimeMs: 0, topics };
};

export const deleteTopics: Handler = async (ctx, req) => {
  const responses = await Promise.all(
    (req.topicNames as string[]).map(async (name) => {
      try {
        await authorize(ctx, 'DELETE', 'TOPIC', name);
        await ctx.services.topics.delete(name); // the scheduler purges its data
        return { name, errorCode: 0 };
      } catch (e) {
        return { name, errorCode: errorCodeOf(ctx, e) };
      }
    }),
  );
  return { throttleTimeMs: 0, responses };
};

export const createPartitions: Handler = async (ctx, req) => {
  const results = await Promise.all(
    req.topics.map(async (t: { name: string; count: number; assignments: unknown[] | null }) => {
      try {
        await authorize(ctx, 'ALTER', 'TOPIC', t.name);
        if (t.assignments !== null)
          throw new KafkaError(
            'INVALID_REPLICA_ASSIGNMENT',
            'Replica assignments are not supported: replicas are placed by the server',
          );
        await ctx.services.topics.addPartitions(t.name, t.count, req.validateOnly);
        return { name: t.name, errorCode: 0, errorMessage: null };
      } catch (e) {
        return { name: t.name, errorCode: errorCodeOf(ctx, e), errorMessage: errorMessageOf(e) };
      }
    }),
  );
  return { throttleTimeMs: 0, results };
};

/**
 * One DescribeConfigs entry, as Kafka reports every config (topic, broker or group): default
 * exactly when its source is the default, never sensitive, and its one synonym (itself, from its
 * source) when synonyms are asked for.
 */
function configEntry(name: string, value: string, configSource: number, readOnly: boolean, synonyms: boolean) {
  return {
    name,
    value,
    readOnly,
    isDefault: configSource === DEFAULT_CONFIG,
    configSource,
    isSensitive: false,
    synonyms: synonyms ? [{ name, value, source: configSource }] : [],
  };
}

function describeTopicConfigs(overrides: Record<string, string>, synonyms = false) {
  return describedTopicConfigNames(overrides).map((name) =>
    Object.hasOwn(overrides, name)
      ? configEntry(name, overrides[name]!, DYNAMIC_TOPIC_CONFIG, false, synonyms)
      : configEntry(name, TOPIC_CONFIG_DEFS[name].default, DEFAULT_CONFIG, false, synonyms),
  );
}

/**
 * This broker's configs (named by its node id), the values the server applies; an empty name asks
 * for the cluster-wide dynamic defaults, of which there are none (every config is read-only).
 */
function describeBrokerConfigs(ctx: RequestContext, name: string, synonyms: boolean) {
  if (name === '') return [];
  if (name !== String(ctx.broker.nodeId))
    throw new KafkaError('INVALID_REQUEST', `Unexpected broker id, expected ${ctx.broker.nodeId} but received ${name}`);
  return ctx.services.brokerConfigs.map((c) =>
    configEntry(c.name, c.value, c.source === 'DEFAULT_CONFIG' ? DEFAULT_CONFIG : STATIC_BROKER_CONFIG, true, synonyms),
  );
}

/**
 * A group's configs: the share group configs it can override (the only group configs here), as
 * Kafka answers them for any group name, used or not.
 */
async function describeGroupConfigs(ctx: RequestContext, group: string, synonyms: boolean) {
  return (await ctx.services.share.describeConfigs(group)).map((c) =>
    configEntry(c.name, c.value, c.isDefault ? DEFAULT_CONFIG : DYNAMIC_GROUP_CONFIG, false, synonyms),
  );
}

/** The entries of one resource: all, or those of the keys asked for (null: all), in their order. */
async function describeResource(ctx: RequestContext, r: DescribedResource, synonyms: boolean) {
  const { resourceType: type, resourceName: name } = r;
  let entries: ReturnType<typeof configEntry>[];
  if (type === BROKER) {
    await authorize(ctx, 'DESCRIBE_CONFIGS', 'CLUSTER');
    entries = describeBrokerConfigs(ctx, name, synonyms);
  } else if (type === GROUP) {
    await authorize(ctx, 'DESCRIBE_CONFIGS', 'GROUP', name);
    entries = await describeGroupConfigs(ctx, name, synonyms);
  } else if (type === TOPIC) {
    await authorize(ctx, 'DESCRIBE_CONFIGS', 'TOPIC', name);
    entries = describeTopicConfigs((await ctx.services.topics.get(name)).configs, synonyms);
  } else throw new KafkaError('INVALID_REQUEST', `Resource type ${type} has no configs here`);
  const keys = r.configurationKeys;
  return keys ? entries.filter((e) => keys.includes(e.name)) : entries;
}

type DescribedResource = { resourceType: number; resourceName: string; configurationKeys: string[] | null };

export const describeConfigs: Handler = async (ctx, req) => {
  const results = await Promise.all(
    req.resources.map(async (r: DescribedResource) => {
      const base = { errorCode: 0, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName };
      try {
        return { ...base, configs: await describeResource(ctx, r, req.includeSynonyms) };
      } catch (e) {
        return { ...base, errorCode: errorCodeOf(ctx, e), errorMessage: errorMessageOf(e), configs: [] };
      }
    }),
  );
  return { throttleTimeMs: 0, results };
};

/** AlterConfigs replaces a topic's overrides with the given set, as Kafka's (non-incremental) API does. */
export const alterConfigs: Handler = async (ctx, req) =>
  alter(ctx, req, async (name, configs: { name: string; value: string | null }[]) => {
    const topic = await ctx.services.topics.get(name);
    const changes: Record<string, string | null> = Object.fromEntries(Object.keys(topic.configs).map((k) => [k, null]));
    for (const c of configs) changes[c.name] = c.value;
    await ctx.services.topics.alterConfigs(name, changes, req.validateOnly);
  });

/** Operations: 0 set, 1 delete; append (2) and subtract (3) apply to list configs (cleanup.policy). */
export const incrementalAlterConfigs: Handler = async (ctx, req) =>
  alter(
    ctx,
    req,
    (name, configs: IncrementalChange[]) => alterTopicIncrementally(ctx, name, configs, req.validateOnly),
    {
      group: alterGroupConfigs(ctx, req.validateOnly),
      shape: incrementalShape,
    },
  );

/** A topic's incremental changes, applied over its overrides (or a list config's default) in their order. */
async function alterTopicIncrementally(
  ctx: RequestContext,
  name: string,
  configs: IncrementalChange[],
  validateOnly: boolean,
): Promise<void> {
  const topic = await ctx.services.topics.get(name);
  const changes: Record<string, string | null> = {};
  for (const c of configs) {
    const current = (
      changes[c.name] ??
      topic.configs[c.name] ??
      (TOPIC_CONFIG_DEFS as Record<string, { default: string }>)[c.name]?.default ??
      ''
    )
      .split(',')
      .filter(Boolean);
    if (c.configOperation === 0) changes[c.name] = c.value;
    else if (c.configOperation === 1) changes[c.name] = null;
    else if (c.configOperation === 2)
      changes[c.name] = [...new Set([...current, ...(c.value ?? '').split(',')])].join(',');
    else if (c.configOperation === 3)
      changes[c.name] = current.filter((v) => !(c.value ?? '').split(',').includes(v)).join(',');
    else throw new KafkaError('INVALID_REQUEST', `Unknown config operation ${c.configOperation}`);
  }
  await ctx.services.topics.alterConfigs(name, changes, validateOnly);
}

type IncrementalChange = { name: string; configOperation: number; value: string | null };

/**
 * Kafka's checks of a resource's changes before any is applied: a config named twice, or a null
 * value for an operation other than DELETE, refuses the resource (INVALID_REQUEST), not the request.
 */
function incrementalShape(configs: IncrementalChange[]): void {
  if (new Set(configs.map((c) => c.name)).size !== configs.length)
    throw new KafkaError('INVALID_REQUEST', 'Error due to duplicate config keys');
  const nulls = configs.filter((c) => c.configOperation !== 1 && c.value === null).map((c) => c.name);
  if (nulls.length > 0) throw new KafkaError('INVALID_REQUEST', `Null value not supported for : ${nulls.join(', ')}`);
}

/**
 * IncrementalAlterConfigs of a group (kafka-configs.sh --entity-type groups): set (0) or delete (1)
 * share group configs, all of them stored in one write or none (ShareGroups.alterConfigs); append
 * and subtract apply to list configs, which groups have none.
 */
const alterGroupConfigs =
  (ctx: RequestContext, validateOnly: boolean) =>
  async (group: string, configs: IncrementalChange[]): Promise<void> => {
    const changes = configs.map((c) => {
      if (c.configOperation === 0) return { name: c.name, value: c.value ?? '' };
      if (c.configOperation === 1) return { name: c.name, value: null };
      throw new KafkaError('INVALID_CONFIG', `${c.name}: only SET and DELETE apply to a group config`);
    });
    await ctx.services.share.alterConfigs(group, changes, validateOnly);
  };

async function alter<C>(
  ctx: RequestContext,
  req: { resources: { resourceType: number; resourceName: string; configs: C }[] },
  apply: (name: string, configs: C) => Promise<void>,
  {
    group,
    shape,
  }: {
    /** A group resource's changes (absent: groups are refused, as legacy AlterConfigs does). */
    group?: (name: string, configs: C) => Promise<void>;
    /** Kafka's checks of a resource's changes, made before authorization. */
    shape?: (configs: C) => void;
  } = {},
) {
  // A resource named twice refuses both (Kafka's "Each resource must appear at most once").
  const keyOf = (r: { resourceType: number; resourceName: string }) => `${r.resourceType}/${r.resourceName}`;
  const named = new Map<string, number>();
  for (const r of req.resources) named.set(keyOf(r), (named.get(keyOf(r)) ?? 0) + 1);
  const responses = await Promise.all(
    req.resources.map(async (r) => {
      const answer = { errorCode: 0, errorMessage: null, resourceType: r.resourceType, resourceName: r.resourceName };
      try {
        if (named.get(keyOf(r))! > 1)
          throw new KafkaError('INVALID_REQUEST', 'Each resource must appear at most once.');
        shape?.(r.configs); // before authorization, as Kafka checks a request's shape
        if (r.resourceType === GROUP && group) {
          await authorize(ctx, 'ALTER_CONFIGS', 'GROUP', r.resourceName);
          await group(r.resourceName, r.configs);
        } else if (r.resourceType === TOPIC) {
          await authorize(ctx, 'ALTER_CONFIGS', 'TOPIC', r.resourceName);
          await apply(r.resourceName, r.configs);
        } else
          throw new KafkaError(
            'INVALID_REQUEST',
            group ? 'Only topic and group configs can be altered' : 'Only topic configs can be altered',
          );
        return answer;
      } catch (e) {
        return { ...answer, errorCode: errorCodeOf(ctx, e), errorMessage: errorMessageOf(e) };
      }
    }),
  );
  return { throttleTimeMs: 0, responses };
}
