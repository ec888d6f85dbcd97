import { answerLimit, jsonAnswerBytes } from './answer-limit.js';
import { Hono, type Context } from 'hono';
import * as z from 'zod';
import { isKafkaError, KafkaError } from '../wire/errors.js';
import { toErrorResponse } from './error-mapping.js';
import type { PolledRecord } from '../groups/consumer-instances.js';
import type { AppEnv } from './app-env.js';
import type { AppServices } from '../services.js';
import { bodySizeLimit, intQuery, parseQuery, readJson } from './request.js';
import { authorize, authorizeAll } from './security.js';

const V2_JSON = 'application/vnd.kafka.v2+json';

/** REST Proxy sends its settings as strings ("true", "1000"); numbers and booleans are accepted too. */
const boolish = z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]);
const intish = z.union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)]);

export const createSchema = z.object({
  name: z.string().optional(),
  format: z
    .string()
    .meta({ examples: ['binary', 'json'] })
    .optional(),
  'auto.offset.reset': z.enum(['earliest', 'latest', 'none', 'smallest', 'largest']).optional(),
  'auto.commit.enable': boolish.optional(),
  'fetch.min.bytes': intish.optional(),
  'consumer.request.timeout.ms': intish.optional(),
});
export const subscribeSchema = z.object({
  topics: z.array(z.string()).optional(),
  topic_pattern: z.string().meta({ description: 'Not supported: INVALID_REQUEST' }).optional(),
});
const tp = z.object({ topic: z.string(), partition: z.int().min(0) });
export const commitSchema = z.object({
  offsets: z.array(tp.extend({ offset: z.int().min(0), metadata: z.string().optional() })).optional(),
});
export const partitionsSchema = z.object({ partitions: z.array(tp).default([]) });
export const seekSchema = z.object({ offsets: z.array(tp.extend({ offset: z.int().min(0) })) });
export const recordsQuerySchema = z.object({
  timeout: intQuery(z.int().min(0)).optional(),
  max_bytes: intQuery(z.int().min(1)).optional(),
});
export const committedQuerySchema = z.object({
  topic: z.array(z.string()).meta({ description: 'Repeatable, paired with partition' }).optional(),
  partition: z
    .array(intQuery(z.int().min(0)))
    .meta({ description: 'Repeatable, paired with topic' })
    .optional(),
});

// The answers' schemas, which the routes below are typed by and the OpenAPI document renders.
export const createdSchema = z.object({ instance_id: z.string(), base_uri: z.string() });
export const subscriptionSchema = z.object({ topics: z.array(z.string()) });
export const assignmentsSchema = z.object({ partitions: z.array(tp) });
export const polledSchema = z.array(
  tp.extend({
    key: z.unknown().meta({ description: 'base64 (binary) or the JSON value (json); null for none' }),
    value: z.unknown(),
    offset: z.int(),
  }),
);
export const committedSchema = z.object({
  offsets: z.array(tp.extend({ offset: z.int(), metadata: z.string() })),
});

/** An optional JSON body: REST Proxy's commit takes none to mean "everything consumed". */
async function optionalJson(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new KafkaError('BAD_REQUEST', 'The request body is not valid JSON');
  }
}

function showValue(bytes: Uint8Array | null, format: 'binary' | 'json'): unknown {
  if (bytes === null) return null;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (format === 'binary') return buf.toString('base64');
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch {
    return buf.toString('utf8');
  }
}

const showRecord = (r: PolledRecord, format: 'binary' | 'json') => ({
  topic: r.topic,
  key: showValue(r.key, format),
  value: showValue(r.value, format),
  partition: r.partition,
  offset: r.offset,
});

/** REST Proxy's error code for a consumer instance it does not know. */
const CONSUMER_INSTANCE_NOT_FOUND = 40403;

/**
 * Confluent REST Proxy v2's consumer API (`/consumers/{group}/instances/{name}/...`): instances live
 * in the metadata store (see groups/consumer-instances.ts), so any server answers any call.
 */
export function consumerInstanceRoutes(services: AppServices): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const instances = () => services.groups.instances;
  app.use('*', bodySizeLimit(services.limits.maxRequestBytes));
  // REST Proxy v2 answers in its own media type, errors (mapped by the app's onError) included.
  app.use('*', async (c, next) => {
    await next();
    // An instance the proxy does not know is REST Proxy's 40403 (consumer instance not found);
    // Kafka's UNKNOWN_MEMBER_ID is 40404 on the other routes.
    if (isKafkaError(c.error, 'UNKNOWN_MEMBER_ID'))
      c.res = c.json({ ...toErrorResponse(c.error).body, error_code: CONSUMER_INSTANCE_NOT_FOUND }, 404);
    if (c.res.headers.get('content-type')?.startsWith('application/json')) c.res.headers.set('content-type', V2_JSON);
  });
  const ids = (c: Context) => [c.req.param('group')!, c.req.param('instance')!] as const;

  app.post('/:group', async (c) => {
    await authorize(c, 'READ', 'GROUP', c.req.param('group')!); // the instance joins the group
    const body = createSchema.parse(await optionalJson(c));
    const format = (body.format ?? 'binary').toLowerCase();
    if (format !== 'binary' && format !== 'json')
      throw new KafkaError('INVALID_REQUEST', `format ${format} is not supported; use binary or json`);
    const reset = body['auto.offset.reset'];
    const inst = await instances().create(c.req.param('group'), {
      ...(body.name === undefined ? {} : { name: body.name }),
      format,
      ...(reset === undefined
        ? {}
        : { autoOffsetReset: reset === 'smallest' ? 'earliest' : reset === 'largest' ? 'latest' : reset }),
      ...(body['auto.commit.enable'] === undefined ? {} : { autoCommit: body['auto.commit.enable'] }),
      ...(body['consumer.request.timeout.ms'] === undefined
        ? {}
        : { requestTimeoutMs: body['consumer.request.timeout.ms'] }),
    });
    const origin = new URL(c.req.url).origin;
    return c.json({
      instance_id: inst.name,
      base_uri: `${origin}/consumers/${encodeURIComponent(inst.groupId)}/instances/${inst.name}`,
    } satisfies z.input<typeof createdSchema>);
  });

  app.delete('/:group/instances/:instance', async (c) => {
    await authorize(c, 'READ', 'GROUP', c.req.param('group')!);
    await instances().delete(...ids(c));
    return c.body(null, 204);
  });

  app.post('/:group/instances/:instance/subscription', async (c) => {
    const body = subscribeSchema.parse(await readJson(c));
    if (body.topic_pattern !== undefined)
      throw new KafkaError('INVALID_REQUEST', 'topic_pattern subscriptions are not supported; list the topics');
    if (!body.topics || body.topics.length === 0)
      throw new KafkaError('BAD_REQUEST', 'topics must list at least one topic');
    await authorize(c, 'READ', 'GROUP', c.req.param('group')!);
    await authorizeAll(c, 'DESCRIBE', 'TOPIC', body.topics);
    await instances().subscribe(...ids(c), body.topics);
    return c.body(null, 204);
  });

  app.get('/:group/instances/:instance/subscription', async (c) => {
    await authorize(c, 'READ', 'GROUP', c.req.param('group')!);
    return c.json({ topics: await instances().subscription(...ids(c)) } satisfies z.input<typeof subscriptionSchema>);
  });

  app.delete('/:group/instances/:instance/subscription', async (c) => {
    await authorize(c, 'READ', 'GROUP', c.req.param('group')!);
    await instances().unsubscribe(...ids(c));
    return c.body(null, 204);
  });

  app.get('/:group/instances/:instance/assignments', async (c) => {
    await authorize(c, 'READ', 'GROUP', c.req.param('group')!);
    const parts = await instances().assignments(...ids(c));
    return c.json({
      partitions: parts.map((p) => ({ topic: p.topic, partition: p.partition })),
    } satisfies z.input<typeof assignmentsSchema>);
  });

  app.get('/:group/instances/:instance/records', async (c) => {
    // Fetch: READ on every topic the instance reads, checked on each poll so a revoked ACL applies at once.
    await authorize(c, 'READ', 'GROUP', c.req.param('group')!);
    if (services.security.authorization)
      await authorizeAll(c, 'READ', 'TOPIC', await instances().subscription(...ids(c)));
    const { timeout: timeoutMs, max_bytes } = parseQuery(c, recordsQuerySchema);
    const maxBytes = Math.min(max_bytes ?? services.limits.maxFetchBytes, services.limits.maxFetchBytes);
    // On Lambda (MAX_RESPONSE_BYTES) the answer stops at a record within the limit; the position follows.
    const { jsonBytes } = answerLimit(services.limits.maxResponseBytes);
    const answer =
      jsonBytes === Infinity
        ? undefined
        : {
            limitBytes: jsonBytes,
            sizeOf: (r: PolledRecord, f: 'binary' | 'json') => jsonAnswerBytes(JSON.stringify(showRecord(r, f))) + 1,
          };
    const { format, records } = await instances().poll(...ids(c), {
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      maxBytes: Math.max(1, maxBytes),
      ...(answer ? { answer } : {}),
    });
    services.metrics.add('FetchRecords', records.length);
    c.set(
      'responseBytes',
      records.reduce((n, r) => n + (r.key?.byteLength ?? 0) + (r.value?.byteLength ?? 0), 0),
    );
    return c.json(records.map((r) => showRecord(r, format)) satisfies z.input<typeof polledSchema>);
  });

  app.post('/:group/instances/:instance/offsets', async (c) => {
    const body = commitSchema.parse(await optionalJson(c));
    await authorize(c, 'READ', 'GROUP', c.req.param('group')!);
    if (services.security.authorization) {
      await authorizeAll(
        c,
        'READ',
        'TOPIC',
        body.offsets ? body.offsets.map((o) => o.topic) : await instances().subscription(...ids(c)),
      );
    }
    await instances().commit(...ids(c), body.offsets);
    return c.body(null, 200);
  });

  // v2 sends the partitions as a GET body; clients that cannot (fetch) may use ?topic=t&partition=0 pairs.
  app.get('/:group/instances/:instance/offsets', async (c) => {
    const { topic: topics = [], partition: partitions = [] } = parseQuery(c, committedQuerySchema);
    if (topics.length !== partitions.length)
      throw new KafkaError('BAD_REQUEST', 'topic and partition query parameters come in pairs');
    const body =
      topics.length > 0
        ? { partitions: topics.map((topic, i) => ({ topic, partition: partitions[i]! })) }
        : partitionsSchema.parse(await optionalJson(c));
    await authorize(c, 'DESCRIBE', 'GROUP', c.req.param('group')!);
    await authorizeAll(
      c,
      'DESCRIBE',
      'TOPIC',
      body.partitions.map((p) => p.topic),
    );
    const committed = await instances().committed(...ids(c), body.partitions);
    return c.json({
      offsets: committed.map((o) => ({
        topic: o.topic,
        partition: o.partition,
        offset: o.offset,
        metadata: o.metadata,
      })),
    } satisfies z.input<typeof committedSchema>);
  });

  app.post('/:group/instances/:instance/positions', async (c) => {
    await authorize(c, 'READ', 'GROUP', c.req.param('group')!);
    const body = seekSchema.parse(await readJson(c));
    await instances().seek(...ids(c), { offsets: body.offsets });
    return c.body(null, 204);
  });

  for (const [path, end] of [
    ['beginning', false],
    ['end', true],
  ] as const) {
    app.post(`/:group/instances/:instance/positions/${path}`, async (c) => {
      await authorize(c, 'READ', 'GROUP', c.req.param('group')!);
      const body = partitionsSchema.parse(await optionalJson(c));
      await instances().seek(...ids(c), { partitions: body.partitions, end });
      return c.body(null, 204);
    });
  }

  return app;
}
