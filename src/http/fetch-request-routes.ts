/**
 * Kafka's FetchRequest over HTTP (extension): `POST /v3/clusters/{c}/records:fetch` reads many
 * partitions of one or several topics in one request: an offset and max bytes per partition, max
 * bytes for the request, and min bytes and max wait across all of them (a long poll that any of
 * the partitions can complete). The answer is Kafka's FetchResponse in JSON: per partition its
 * error, high watermark, last stable offset, log start offset, the offset to fetch next, and its
 * records, as stored batches in base64 (the default) or as a JSON record list. With `Accept:
 * application/vnd.kafka.fetch-response` and the record-batch format the same answer is binary
 * (wire/fetch-response.ts): no JSON, no base64. With
 * `isolation_level` read_committed (Kafka's FetchRequest field) every partition is read up to its
 * last stable offset and answers its aborted transactions, as the per-partition fetch does.
 */
import { type Context, Hono } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import type { IsolationLevel, PartitionFetch, PartitionFetchOutcome } from '../log/partition-log.js';
import type { AbortedTransaction } from '../partition/offset-index.js';
import { lastStableOffset, type PartitionState } from '../partition/partition-state.js';
import { fetchedRecords } from '../log/fetched-records.js';
import { authorizeAll } from './security.js';
import { unknownPartition, type Topic } from '../topics/topics.js';
import { delayedFetch, partitionWatchKey } from '../timer/delayed-fetch.js';
import { answerLimit, jsonAnswerBytes } from './answer-limit.js';
import type { AppEnv } from './app-env.js';
import type { AppServices } from '../services.js';
import { isoTimestamps, OUTPUT_FORMATS, showRecordText, type OutputFormat } from './record-text.js';
import { ISOLATION_LEVELS, readJson } from './request.js';
import { accepts } from './record-batch-body.js';
import {
  encodeFetchResponseParts,
  FETCH_RESPONSE_ABORTED_BYTES,
  FETCH_RESPONSE_MEDIA_TYPE,
  FETCH_RESPONSE_PARTITION_BYTES,
  type FetchResponseTopic,
} from '../wire/fetch-response.js';

const nonNegative = z.number().int().nonnegative();

/** Kafka's FetchRequest fields (snake_case, as in its message spec); `format` is ours. */
export const fetchRequestSchema = z.object({
  max_wait_ms: nonNegative.default(0),
  min_bytes: nonNegative.default(0),
  max_bytes: z.number().int().positive().optional(),
  format: z.enum(['record-batch', ...OUTPUT_FORMATS]).default('record-batch'),
  /** Kafka's int8 (0, 1) or its name. */
  isolation_level: z
    .union([z.enum(ISOLATION_LEVELS), z.literal(0), z.literal(1)])
    .default('read_uncommitted')
    .transform((v): IsolationLevel => (v === 1 || v === 'read_committed' ? 'read_committed' : 'read_uncommitted')),
  topics: z
    .array(
      z.object({
        topic: z.string().min(1),
        partitions: z
          .array(
            z.object({
              partition: nonNegative,
              fetch_offset: nonNegative,
              partition_max_bytes: z.number().int().positive().optional(),
            }),
          )
          .min(1),
      }),
    )
    .min(1),
});

type FetchFormat = z.infer<typeof fetchRequestSchema>['format'];

interface Planned {
  topic: string;
  partition: number;
  offset: number;
  maxBytes: number;
  meta?: Topic;
  error?: KafkaError;
}

/**
 * Reads every planned partition that has a topic; the others keep their error. `states` (by plan
 * index), just read by a long poll's check, spare the reader reading them again.
 */
async function readAll(
  services: AppServices,
  plan: Planned[],
  maxBytes: number,
  limitBytes: number,
  isolation: IsolationLevel,
  abortedCost?: (a: AbortedTransaction) => number,
  states?: (PartitionState | undefined)[],
): Promise<PartitionFetchOutcome[]> {
  const fetches: PartitionFetch[] = [];
  const at: number[] = [];
  plan.forEach((p, i) => {
    if (!p.meta) return;
    at.push(i);
    const state = states?.[i];
    fetches.push({
      topic: p.meta,
      partition: p.partition,
      offset: p.offset,
      maxBytes: p.maxBytes,
      ...(state ? { state } : {}),
    });
  });
  const read =
    fetches.length > 0
      ? await services.log.reader.readBatchesMany(fetches, maxBytes, limitBytes, isolation, abortedCost)
      : [];
  const out: PartitionFetchOutcome[] = plan.map((p) => ({ ok: false, error: p.error! }));
  at.forEach((i, k) => (out[i] = read[k]!));
  return out;
}

/**
 * The states of the plan's partitions, each topic's read together (`PartitionReader.statesOf`);
 * undefined where a topic's read failed (the read of the records that follows answers its error).
 */
async function planStates(services: AppServices, plan: Planned[]): Promise<(PartitionState | undefined)[]> {
  const byTopic = new Map<Topic, number[]>();
  plan.forEach((p, i) => {
    if (p.meta) byTopic.set(p.meta, [...(byTopic.get(p.meta) ?? []), i]);
  });
  const out: (PartitionState | undefined)[] = plan.map(() => undefined);
  await Promise.all(
    [...byTopic].map(async ([meta, at]) => {
      const states = await services.log.reader
        .statesOf(
          meta,
          at.map((i) => plan[i]!.partition),
        )
        .catch(() => undefined);
      for (const i of at) out[i] = states?.get(plan[i]!.partition);
    }),
  );
  return out;
}

const bytesOf = (outcomes: Awaited<ReturnType<typeof readAll>>) =>
  outcomes.reduce((n, o) => n + (o.ok ? o.bytes : 0), 0);

/**
 * A partition's records as JSON texts, within what is left of the answer's room (`room.bytes`);
 * the next offset is the first record left out. A first record of the whole answer that alone
 * does not fit is MESSAGE_TOO_LARGE for its partition.
 */
function shownRecords(
  o: Extract<PartitionFetchOutcome, { ok: true }>,
  p: Planned,
  format: OutputFormat,
  room: { bytes: number; shown: number },
): { records: string[]; nextOffset: number } {
  const records: string[] = [];
  // read_committed answers carry their aborted transactions (empty or not), read_uncommitted none.
  const isolation = o.abortedTransactions ? 'read_committed' : 'read_uncommitted';
  const iso = isoTimestamps();
  for (const r of fetchedRecords(o, p.offset, isolation).records) {
    const text = showRecordText(r, p.partition, format, iso);
    if (room.bytes !== Infinity) {
      const cost = jsonAnswerBytes(text) + 1;
      if (cost > room.bytes) {
        if (room.shown === 0)
          throw new KafkaError(
            'MESSAGE_TOO_LARGE',
            `The record at offset ${r.offset} takes more than this deployment can answer as ${format} JSON; fetch it as record batches`,
          );
        return { records, nextOffset: r.offset };
      }
      room.bytes -= cost;
    }
    room.shown++;
    records.push(text);
  }
  return { records, nextOffset: o.nextOffset };
}

/** What one partition's answer costs besides its records and aborted transactions (field names and numbers). */
const PARTITION_OVERHEAD = 256;

/** An aborted transaction as the JSON answer lists it (Kafka's field names). */
const abortedJson = (a: AbortedTransaction): string =>
  JSON.stringify({ producer_id: a.producerId, first_offset: a.firstOffset, last_offset: a.lastOffset });

/** What a JSON answer's aborted transactions cost of its room: each entry and a comma. */
const abortedJsonBytes = (list: readonly AbortedTransaction[] | undefined): number =>
  (list ?? []).reduce((n, a) => n + jsonAnswerBytes(abortedJson(a)) + 1, 0);

/** The binary answer's bytes besides the records (topic names, each partition's fixed fields, a message each). */
const binaryOverhead = (plan: Planned[]) =>
  plan.reduce((n, p) => n + 6 + Buffer.byteLength(p.topic) + FETCH_RESPONSE_PARTITION_BYTES + 256, 4);

/** The answer as Kafka's FetchResponse `responses`, binary (wire/fetch-response.ts). */
function binaryAnswer(c: Context<AppEnv>, plan: Planned[], outcomes: PartitionFetchOutcome[]): Response {
  const byTopic = new Map<string, FetchResponseTopic>();
  outcomes.forEach((o, i) => {
    const p = plan[i]!;
    let t = byTopic.get(p.topic);
    if (!t) byTopic.set(p.topic, (t = { topic: p.topic, partitions: [] }));
    t.partitions.push(
      o.ok
        ? {
            partitionIndex: p.partition,
            errorCode: 0,
            error: null,
            errorMessage: null,
            highWatermark: o.highWatermark,
            lastStableOffset: o.lastStableOffset,
            logStartOffset: o.logStartOffset,
            nextOffset: o.nextOffset,
            abortedTransactions: o.abortedTransactions ?? null,
            records: o.batches,
          }
        : {
            partitionIndex: p.partition,
            errorCode: o.error.code,
            error: o.error.errorName,
            errorMessage: o.error.message,
            highWatermark: -1,
            lastStableOffset: -1,
            logStartOffset: -1,
            nextOffset: p.offset,
            abortedTransactions: null,
            records: null,
          },
    );
  });
  // Written part by part: the records go out as the views they were read into, not copied into one buffer.
  const parts = encodeFetchResponseParts([...byTopic.values()]);
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
  return c.body(body, 200, {
    'Content-Type': FETCH_RESPONSE_MEDIA_TYPE,
    'Content-Length': String(parts.reduce((n, p) => n + p.byteLength, 0)),
  });
}

export function fetchRequestRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post('/records:fetch', async (c) => {
    const services = c.get('services');
    const body = fetchRequestSchema.parse(await readJson(c));
    const { limits } = services;
    const maxBytes = Math.min(body.max_bytes ?? limits.maxFetchBytes, limits.maxFetchBytes);
    const maxWaitMs = Math.min(body.max_wait_ms, limits.maxFetchWaitMs);
    const limit = answerLimit(limits.maxResponseBytes);
    const format: FetchFormat = body.format;
    const binary = format === 'record-batch' && accepts(c, FETCH_RESPONSE_MEDIA_TYPE);

    const seen = new Set<string>();
    const names = [...new Set(body.topics.map((t) => t.topic))];
    // Kafka's Fetch needs READ on every topic it names.
    await authorizeAll(c, 'READ', 'TOPIC', names);
    const topics = new Map<string, Topic | KafkaError>(
      await Promise.all(
        names.map(async (n) => {
          try {
            return [n, await services.topics.get(n)] as const;
          } catch (e) {
            if (e instanceof KafkaError) return [n, e] as const;
            throw e;
          }
        }),
      ),
    );
    const plan: Planned[] = [];
    for (const t of body.topics) {
      const meta = topics.get(t.topic)!;
      for (const p of t.partitions) {
        const key = `${t.topic}\0${p.partition}`;
        if (seen.has(key))
          throw new KafkaError('INVALID_REQUEST', `Partition ${t.topic}-${p.partition} appears twice in the request`);
        seen.add(key);
        const entry: Planned = {
          topic: t.topic,
          partition: p.partition,
          offset: p.fetch_offset,
          maxBytes: Math.min(p.partition_max_bytes ?? maxBytes, limits.maxFetchBytes),
        };
        if (meta instanceof KafkaError) entry.error = meta;
        else {
          const unknown = unknownPartition(meta, p.partition);
          if (unknown) entry.error = unknown;
          else entry.meta = meta;
        }
        plan.push(entry);
      }
    }

    // Record batches travel base64 in the JSON answer: 4 bytes per 3 against the answer's room.
    // JSON records are bounded when shown, record by record.
    // Binary answers are bounded like any binary body (the envelope's base64 is in binaryBytes).
    const batchLimit = binary
      ? Math.max(0, limit.binaryBytes - binaryOverhead(plan))
      : format === 'record-batch'
        ? Math.floor((Math.max(0, limit.jsonBytes - PARTITION_OVERHEAD * plan.length) * 3) / 4)
        : Infinity;
    // read_committed: each partition's aborted transactions count against the same room, in batch
    // bytes (binary: their fields; JSON: their text, which base64 batches would take 4 bytes per 3 of).
    // A JSON record list's are counted when its records are shown.
    const abortedCost = binary
      ? () => FETCH_RESPONSE_ABORTED_BYTES
      : format === 'record-batch'
        ? (a: AbortedTransaction) => ((jsonAnswerBytes(abortedJson(a)) + 1) * 3) / 4
        : undefined;
    const read = (states?: (PartitionState | undefined)[]) =>
      readAll(services, plan, maxBytes, batchLimit, body.isolation_level, abortedCost, states);
    let outcomes = await read();
    // As Kafka's DelayedFetch, an error in any partition answers at once.
    if (bytesOf(outcomes) < body.min_bytes && maxWaitMs > 0 && outcomes.every((o) => o.ok)) {
      // The LSO too: a marker moves it (and read_committed answers) without a new high watermark.
      const marks = (s: { highWatermark: number; logStartOffset: number; lastStableOffset: number }) =>
        `${s.highWatermark}/${s.logStartOffset}/${s.lastStableOffset}`;
      let seenMarks = outcomes.map((o) => (o.ok ? marks(o) : 'x')).join(',');
      const watched = plan.filter((p) => p.meta).map((p) => partitionWatchKey(p.topic, p.partition));
      const signal = c.req.raw.signal;
      try {
        const result = await delayedFetch({
          purgatory: services.fetchPurgatory,
          keys: watched,
          minBytes: body.min_bytes,
          maxWaitMs,
          initial: { outcomes, bytes: bytesOf(outcomes) },
          answersNow: (r) => r.outcomes.some((o) => !o.ok),
          signal,
          // One read of the states per wake-up (per shard of each topic on a topic with a commit
          // log); the records are read again, from those states, only when a HW, log start or LSO moved.
          poll: async () => {
            const states = await planStates(services, plan);
            const now = states.map((s) => (s ? marks({ ...s, lastStableOffset: lastStableOffset(s) }) : 'x')).join(',');
            if (now === seenMarks) return undefined;
            const again = await read(states);
            outcomes = again;
            seenMarks = again.map((o) => (o.ok ? marks(o) : 'x')).join(',');
            return { outcomes: again, bytes: bytesOf(again) };
          },
        });
        outcomes = result.outcomes;
      } catch (e) {
        if (!signal.aborted) throw e;
        return c.body(null, 204); // the client has gone; nobody reads this
      }
    }

    if (binary) return binaryAnswer(c, plan, outcomes);

    const room = { bytes: limit.jsonBytes - PARTITION_OVERHEAD * plan.length, shown: 0 };
    const byTopic = new Map<string, string[]>();
    outcomes.forEach((o, i) => {
      const p = plan[i]!;
      let answer: string;
      const failed = (e: KafkaError) =>
        JSON.stringify({
          partition_index: p.partition,
          error_code: e.code,
          error: e.errorName,
          error_message: e.message,
          high_watermark: -1,
          last_stable_offset: -1,
          log_start_offset: -1,
          next_offset: p.offset,
          records: [],
        });
      if (!o.ok) answer = failed(o.error);
      else {
        const base = (aborted: readonly AbortedTransaction[] | undefined, nextOffset: number) =>
          `{"partition_index":${p.partition},"error_code":0,"high_watermark":${o.highWatermark},` +
          `"last_stable_offset":${o.lastStableOffset},"log_start_offset":${o.logStartOffset},` +
          (aborted ? `"aborted_transactions":[${aborted.map(abortedJson).join(',')}],` : '') +
          `"next_offset":${nextOffset}`;
        const listed = o.abortedTransactions;
        if (format === 'record-batch')
          answer = `${base(listed, o.nextOffset)},"records":${JSON.stringify(Buffer.from(o.batches).toString('base64'))}}`;
        else {
          // The aborted transactions take their room before the records: the whole list read (an
          // upper bound of the list of the records shown), then what the records shown leave of it
          // is given back. A list that does not fit answers no records, from the fetch offset.
          const reserved = room.bytes === Infinity ? 0 : abortedJsonBytes(listed);
          if (reserved > room.bytes) answer = `${base(listed && [], p.offset)},"records":[]}`;
          else {
            room.bytes -= reserved;
            try {
              const shown = shownRecords(o, p, format, room);
              const kept =
                listed && (shown.nextOffset > p.offset ? listed.filter((a) => a.firstOffset < shown.nextOffset) : []);
              room.bytes += reserved - (reserved > 0 ? abortedJsonBytes(kept) : 0);
              // The records are JSON texts already: spliced in, not parsed and written again.
              answer = `${base(kept, shown.nextOffset)},"records":[${shown.records.join(',')}]}`;
            } catch (e) {
              if (!(e instanceof KafkaError)) throw e;
              room.bytes += reserved;
              answer = failed(e);
            }
          }
        }
      }
      let list = byTopic.get(p.topic);
      if (!list) byTopic.set(p.topic, (list = []));
      list.push(answer);
    });
    const responses = [...byTopic].map(
      ([topic, partitions]) => `{"topic":${JSON.stringify(topic)},"partitions":[${partitions.join(',')}]}`,
    );
    const json = `{"kind":"KafkaFetchResponse","cluster_id":${JSON.stringify(services.clusterId)},"responses":[${responses.join(',')}]}`;
    return c.body(Buffer.from(json), 200, { 'Content-Type': 'application/json' });
  });

  return app;
}
