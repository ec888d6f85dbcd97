import { Hono, type Context } from 'hono';
import * as z from 'zod';
import {
  BATCH_SIZE,
  BATCHING_WINDOW_MS,
  defaultGroupId,
  FILTERS,
  FUNCTION_RESPONSE_TYPES,
  KEY_LANES,
  ORDERINGS,
  RECORD_AGE_SECONDS,
  RETRY_ATTEMPTS,
  STARTING_POSITIONS,
  TIMEOUT_MS,
  TRIGGER_STATES,
  deliveryKnobs,
  validateTriggerName,
  type TriggerDefinition,
  type TriggerTarget,
} from '../triggers/trigger.js';
import type { TriggerDescription } from '../triggers/index.js';
import type { TriggerDescriptionJson, TriggerJson } from '../wire/trigger-json.js';
import type { AppEnv } from './app-env.js';
import { dateTime, type Holds, type Same, type WireBody } from './openapi-parts.js';
import { readJson } from './request.js';
import type { Resources } from './resources.js';
import { authorize } from './security.js';

const timeoutMs = z
  .int()
  .meta({
    description: `How long one invocation may take (${TIMEOUT_MS.min}-${TIMEOUT_MS.max}, default ${TIMEOUT_MS.default})`,
  })
  .optional();
const webhookTarget = z.object({
  type: z.literal('WEBHOOK').meta({ description: 'An HTTP endpoint POSTed the event; 2xx is success' }),
  url: z.string().meta({ format: 'uri' }),
  timeout_ms: timeoutMs,
});
const lambdaTarget = z.object({
  type: z.literal('LAMBDA').meta({ description: 'A Lambda function invoked (RequestResponse) with the event' }),
  function_arn: z.string().meta({
    description: "The function's ARN (a version or alias may qualify it); the deployment must grant its invocation",
  }),
  timeout_ms: timeoutMs,
});
const targetSchema = z.discriminatedUnion('type', [webhookTarget, lambdaTarget]);
/** A target as answered: its timeout with the default filled in. */
const answeredTargetSchema = z.discriminatedUnion('type', [
  webhookTarget.required({ timeout_ms: true }),
  lambdaTarget.required({ timeout_ms: true }),
]);
const knobs = {
  batch_size: z
    .int()
    .meta({
      description: `Records per invocation at most, Lambda's BatchSize (${BATCH_SIZE.min}-${BATCH_SIZE.max}, default ${BATCH_SIZE.default})`,
    })
    .optional(),
  starting_position: z
    .enum(STARTING_POSITIONS)
    .meta({
      description: "Where partitions the group has no offset for start, Lambda's StartingPosition (default LATEST)",
    })
    .optional(),
  starting_position_timestamp: z.int().min(0).meta({ description: 'AT_TIMESTAMP: epoch milliseconds' }).optional(),
  maximum_batching_window_ms: z
    .int()
    .meta({
      description: `How long to gather records before invoking, Lambda's MaximumBatchingWindowInSeconds in ms (${BATCHING_WINDOW_MS.min}-${BATCHING_WINDOW_MS.max}, default ${BATCHING_WINDOW_MS.default})`,
    })
    .optional(),
  maximum_retry_attempts: z
    .int()
    .meta({
      description: `Lambda's MaximumRetryAttempts (${RETRY_ATTEMPTS.min} for infinite, the default, to ${RETRY_ATTEMPTS.max})`,
    })
    .optional(),
  maximum_record_age_seconds: z
    .int()
    .meta({
      description: `Lambda's MaximumRecordAgeInSeconds (-1 for infinite, the default, or ${RECORD_AGE_SECONDS.min}-${RECORD_AGE_SECONDS.max})`,
    })
    .optional(),
  bisect_batch_on_function_error: z
    .boolean()
    .meta({ description: "Lambda's BisectBatchOnFunctionError: split a failing batch in two and retry each half" })
    .optional(),
  function_response_types: z
    .array(z.enum(FUNCTION_RESPONSE_TYPES))
    .meta({ description: "Lambda's FunctionResponseTypes: ReportBatchItemFailures for partial batch responses" })
    .optional(),
  on_failure_destination: z
    .string()
    .meta({
      description:
        "Where records given up on go: kafka://{topic}, a topic of this log, or (on AWS) an S3 bucket's, an SQS queue's or an SNS topic's ARN",
    })
    .optional(),
  filter_criteria: z
    .object({ filters: z.array(z.object({ pattern: z.string() })) })
    .meta({
      description: `Lambda's FilterCriteria: records no pattern matches are committed without invoking (at most ${FILTERS.max} patterns)`,
    })
    .optional(),
  ordering: z
    .enum(ORDERINGS)
    .meta({
      description:
        'PARTITION (default): one invocation in flight per partition. KEY: one per key lane, order kept per key. UNORDERED: through a share group, key_lanes invocations per partition at once, no order',
    })
    .optional(),
  key_lanes: z
    .int()
    .meta({
      description: `KEY and UNORDERED ordering: invocations in flight per partition at most (${KEY_LANES.min}-${KEY_LANES.max}, default ${KEY_LANES.default})`,
    })
    .optional(),
};

export const createTriggerSchema = z.object({
  trigger_name: z.string(),
  topic_name: z.string().min(1),
  group_id: z
    .string()
    .min(1)
    .meta({ description: 'The consumer group it consumes as (default trigger.{trigger_name})' })
    .optional(),
  target: targetSchema,
  ...knobs,
});

export const triggerSchema = z
  .object({
    kind: z.literal('KafkaTrigger'),
    metadata: z.object({ self: z.string() }),
    cluster_id: z.string(),
    trigger_name: z.string(),
    topic_name: z.string(),
    group_id: z.string(),
    target: answeredTargetSchema,
    ...knobs,
    state: z.enum(TRIGGER_STATES),
    created_at: dateTime,
    consumer_group: z.object({ related: z.string() }),
  })
  // An answer has every knob with its default filled in; those without a default stay optional.
  .required({
    batch_size: true,
    starting_position: true,
    maximum_batching_window_ms: true,
    maximum_retry_attempts: true,
    maximum_record_age_seconds: true,
    bisect_batch_on_function_error: true,
    function_response_types: true,
    ordering: true,
  });

export const triggerDescriptionSchema = triggerSchema.extend({
  lag: z.int().meta({ description: 'Records past the committed offsets, over every partition' }),
  partitions: z.array(
    z.object({
      partition_id: z.int(),
      committed_offset: z.int().nullable(),
      log_start_offset: z.int(),
      high_watermark: z.int(),
      lag: z.int(),
      delivering_until: dateTime
        .nullable()
        .meta({ description: "While a delivery holds the partition's lease: until when" }),
    }),
  ),
});

export const triggerListSchema = z.object({
  kind: z.literal('KafkaTriggerList'),
  metadata: z.looseObject({}),
  data: z.array(triggerSchema),
});

// What the client and the console read (src/wire/trigger-json.ts) is what these answer.
export type TriggerAnswersAsWire = Holds<Same<WireBody<typeof triggerSchema>, TriggerJson>>;
export type TriggerDescriptionAnswersAsWire = Holds<
  Same<WireBody<typeof triggerDescriptionSchema>, TriggerDescriptionJson>
>;

const showTrigger = (r: Resources, d: TriggerDefinition): z.infer<typeof triggerSchema> => ({
  kind: 'KafkaTrigger',
  metadata: { self: `${r.base}/triggers/${d.name}` },
  cluster_id: r.clusterId,
  trigger_name: d.name,
  topic_name: d.topic,
  group_id: d.groupId,
  target: shownTarget(d.target),
  batch_size: d.batchSize,
  starting_position: d.startingPosition,
  ...(d.startingTimestamp !== undefined && { starting_position_timestamp: d.startingTimestamp }),
  ...shownKnobs(d),
  state: d.state,
  created_at: new Date(d.createdAt).toISOString(),
  consumer_group: { related: `${r.base}/consumer-groups/${d.groupId}` },
});

function shownTarget(t: TriggerTarget): z.infer<typeof answeredTargetSchema> {
  return t.type === 'LAMBDA'
    ? { type: 'LAMBDA', function_arn: t.functionArn, timeout_ms: t.timeoutMs }
    : { type: 'WEBHOOK', url: t.url, timeout_ms: t.timeoutMs };
}

function definedTarget(t: z.infer<typeof targetSchema>): TriggerTarget {
  const timeoutMs = t.timeout_ms ?? TIMEOUT_MS.default;
  return t.type === 'LAMBDA'
    ? { type: 'LAMBDA', functionArn: t.function_arn, timeoutMs }
    : { type: 'WEBHOOK', url: t.url, timeoutMs };
}

/** The delivery knobs with their defaults filled in, under the API's names. */
function shownKnobs(d: TriggerDefinition) {
  const k = deliveryKnobs(d);
  return {
    maximum_batching_window_ms: k.maximumBatchingWindowMs,
    maximum_retry_attempts: k.maximumRetryAttempts,
    maximum_record_age_seconds: k.maximumRecordAgeSeconds,
    bisect_batch_on_function_error: k.bisectBatchOnFunctionError,
    function_response_types: d.functionResponseTypes ?? [],
    ...(d.onFailureDestination !== undefined && { on_failure_destination: d.onFailureDestination }),
    ...(d.filterCriteria !== undefined && { filter_criteria: d.filterCriteria }),
    ordering: k.ordering,
    ...(k.ordering !== 'PARTITION' && { key_lanes: k.keyLanes }),
  };
}

const describeTrigger = (r: Resources, d: TriggerDescription) => ({
  ...showTrigger(r, d),
  lag: d.lag,
  partitions: d.partitions.map((p) => ({
    partition_id: p.partition,
    committed_offset: p.committedOffset ?? null,
    log_start_offset: p.logStartOffset,
    high_watermark: p.highWatermark,
    lag: p.lag,
    delivering_until: p.deliveringUntil === undefined ? null : new Date(p.deliveringUntil).toISOString(),
  })),
});

/** The knobs the body gives, under the definition's names (absent ones stay absent: defaults). */
function definedKnobs(b: z.infer<typeof createTriggerSchema>): Partial<TriggerDefinition> {
  const k: Partial<TriggerDefinition> = {
    maximumBatchingWindowMs: b.maximum_batching_window_ms,
    maximumRetryAttempts: b.maximum_retry_attempts,
    maximumRecordAgeSeconds: b.maximum_record_age_seconds,
    bisectBatchOnFunctionError: b.bisect_batch_on_function_error,
    functionResponseTypes: b.function_response_types,
    onFailureDestination: b.on_failure_destination,
    filterCriteria: b.filter_criteria,
    ordering: b.ordering,
    keyLanes: b.key_lanes,
  };
  return Object.fromEntries(Object.entries(k).filter(([, v]) => v !== undefined));
}

const nameParam = (c: Context<AppEnv>) => {
  const name = c.req.param('trigger_name') ?? '';
  validateTriggerName(name);
  return name;
};

/**
 * Extension (v3 has no triggers): a topic bound to a webhook or a Lambda function, delivered as its own consumer group
 * (docs/triggers.md). Changing triggers is ALTER on the cluster (a trigger makes the cluster call
 * out) with READ on the topic and the group; reading them is DESCRIBE on the cluster.
 */
export function triggerRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/triggers', async (c) => {
    await authorize(c, 'DESCRIBE', 'CLUSTER');
    const r = c.get('resources');
    const list = await c.get('services').triggers.admin.list();
    return c.json(
      r.list(
        'KafkaTriggerList',
        `${r.base}/triggers`,
        list.map((d) => showTrigger(r, d)),
      ),
    );
  });

  app.post('/triggers', async (c) => {
    const body = createTriggerSchema.parse(await readJson(c));
    validateTriggerName(body.trigger_name);
    const groupId = body.group_id ?? defaultGroupId(body.trigger_name);
    await authorize(c, 'ALTER', 'CLUSTER');
    await authorize(c, 'READ', 'TOPIC', body.topic_name);
    await authorize(c, 'READ', 'GROUP', groupId);
    const { triggers, clock } = c.get('services');
    const created = await triggers.admin.create({
      name: body.trigger_name,
      topic: body.topic_name,
      groupId,
      target: definedTarget(body.target),
      batchSize: body.batch_size ?? BATCH_SIZE.default,
      startingPosition: body.starting_position ?? 'LATEST',
      ...(body.starting_position_timestamp !== undefined && { startingTimestamp: body.starting_position_timestamp }),
      ...definedKnobs(body),
      state: 'ENABLED',
      createdAt: clock.now(),
    });
    c.get('audit')('trigger created', {
      audit: 'trigger-created',
      principal: c.get('principal'),
      trigger: created.name,
    });
    return c.json(showTrigger(c.get('resources'), created), 201);
  });

  app.get('/triggers/:trigger_name', async (c) => {
    const name = nameParam(c);
    await authorize(c, 'DESCRIBE', 'CLUSTER');
    const d = await c.get('services').triggers.admin.describe(name);
    return c.json(describeTrigger(c.get('resources'), d));
  });

  for (const action of ['pause', 'resume'] as const) {
    app.post(`/triggers/:trigger_name/${action}`, async (c) => {
      const name = nameParam(c);
      await authorize(c, 'ALTER', 'CLUSTER');
      const d = await c.get('services').triggers.admin[action](name);
      return c.json(showTrigger(c.get('resources'), d));
    });
  }

  app.delete('/triggers/:trigger_name', async (c) => {
    const name = nameParam(c);
    await authorize(c, 'ALTER', 'CLUSTER');
    await c.get('services').triggers.admin.delete(name);
    c.get('audit')('trigger deleted', { audit: 'trigger-deleted', principal: c.get('principal'), trigger: name });
    return c.body(null, 204);
  });

  return app;
}
