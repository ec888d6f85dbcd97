/**
 * A partition's records, read over HTTP: the one route the fetch function serves (infra/routes.ts).
 * Apart from the produce routes (record-routes.ts) so that the fetch bundle holds none of their
 * body schemas or the transaction admission.
 */
import { Hono } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import { walkFetchedRecords } from '../log/fetched-records.js';
import { onlyPartition, type BatchFetchResult, type IsolationLevel } from '../log/partition-reader.js';
import { lastStableOffset } from '../partition/partition-state.js';
import { delayedFetch, partitionWatchKey } from '../timer/delayed-fetch.js';
import { ABORTED_HEADER_BYTES, answerLimit } from './answer-limit.js';
import type { AppEnv } from './app-env.js';
import { JsonBytes } from './json-bytes.js';
import { RecordJsonWriter } from './record-json-writer.js';
import { OUTPUT_FORMATS, type OutputFormat } from './record-text.js';
import { abortedHeaderCost, acceptsRecordBatches, recordBatchResponse } from './record-batch-body.js';
import { intQuery, ISOLATION_LEVELS, parseQuery, partitionParam } from './request.js';
import { authorize } from './security.js';

/** A partition's fetch: the query the route parses, as the OpenAPI document lists it. */
export const fetchQuerySchema = z.object({
  offset: intQuery(z.int().min(0)).default(0),
  max_bytes: intQuery(z.int().min(1))
    .meta({
      description:
        "Kafka's max bytes, at batch granularity: the answer starts at the stored batch holding `offset` (JSON: at that record) and takes whole batches within max_bytes, at least one. A deployment with MAX_RESPONSE_BYTES (Lambda: 6 MB) also keeps the answer within that, after base64 or JSON inflation: a JSON answer then stops at a record and `next_offset` goes on from there",
    })
    .optional(),
  format: z.enum(OUTPUT_FORMATS).default('binary').meta({ description: 'How keys and values are shown' }),
  min_bytes: intQuery(z.int().min(0)).default(0).meta({
    description:
      "Kafka's fetch.min.bytes: wait until this many bytes are readable below the high watermark (with max_wait_ms)",
  }),
  max_wait_ms: intQuery(z.int().min(0)).default(0).meta({
    description:
      "Kafka's fetch.max.wait.ms: the longest wait for min_bytes, bounded by the server (MAX_FETCH_WAIT_MS, 25 s); then whatever there is is returned, possibly nothing",
  }),
  isolation_level: z.enum(ISOLATION_LEVELS).default('read_uncommitted').meta({
    description:
      "Kafka's isolation level: read_committed reads up to the last stable offset and leaves out aborted transactions (JSON), or answers their ranges in Kafka-Aborted-Transactions (record batches)",
  }),
});

/**
 * A partition's JSON record list: the fetched records, as many as fit in `limitBytes` of answer
 * (at least one; a record that alone is over it is MESSAGE_TOO_LARGE, a bound the record-batch
 * format does not inflate), and the offset to fetch next: the first record left out, if any.
 */
function recordList(
  head: string,
  batches: BatchFetchResult,
  offset: number,
  isolation: IsolationLevel,
  partition: number,
  format: OutputFormat,
  limitBytes: number,
): { body: Buffer<ArrayBuffer>; shown: number } {
  // About what the records take as text; the buffer grows if they take more.
  const out = new JsonBytes(head.length + batches.batches.byteLength * (format === 'binary' ? 1.5 : 1.2) + 1024);
  out.ascii(head);
  const writer = new RecordJsonWriter(out, partition, format, limitBytes);
  walkFetchedRecords(batches, offset, isolation, writer);
  if (writer.stoppedAt !== undefined && writer.shown === 0)
    throw new KafkaError(
      'MESSAGE_TOO_LARGE',
      `The record at offset ${writer.stoppedAt} takes more than this deployment can answer (${limitBytes} bytes) as ${format} JSON; fetch it as record batches`,
    );
  out.ascii(
    `],"next_offset":${writer.stoppedAt ?? batches.nextOffset},"high_watermark":${batches.highWatermark},"log_start_offset":${batches.logStartOffset},"last_stable_offset":${batches.lastStableOffset}}`,
  );
  return { body: out.done(), shown: writer.shown };
}

const positionOf = ({ highWatermark, logStartOffset, lastStableOffset }: BatchFetchResult) => ({
  highWatermark,
  logStartOffset,
  lastStableOffset,
});

export function recordFetchRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // Extension: a stateless fetch, Kafka's Fetch for one partition. With min_bytes and max_wait_ms
  // (fetch.min.bytes, fetch.max.wait.ms) it is a long poll: it waits in the fetch purgatory until
  // that many bytes are readable below the HW or the time is up, and stops when the client leaves.
  app.get('/topics/:topic/partitions/:partition/records', async (c) => {
    await authorize(c, 'READ', 'TOPIC', c.req.param('topic'));
    const services = c.get('services');
    const topic = await services.topics.get(c.req.param('topic'));
    const partition = partitionParam(c.req.param('partition'));
    const query = parseQuery(c, fetchQuerySchema);
    const { offset, min_bytes: minBytes, format, isolation_level: isolation } = query;
    const maxBytes = Math.min(query.max_bytes ?? services.limits.maxFetchBytes, services.limits.maxFetchBytes);
    const maxWaitMs = Math.min(query.max_wait_ms, services.limits.maxFetchWaitMs);
    const limit = answerLimit(services.limits.maxResponseBytes);
    const fetchBytes = Math.max(maxBytes, 1);
    const fetches = [{ topic, partition, offset, maxBytes: fetchBytes }];
    const read = acceptsRecordBatches(c)
      ? async () => {
          // The aborted transactions travel in a header: fewer batches when their list would not fit it.
          const r = onlyPartition(
            await services.log.reader.readBatchesMany(fetches, fetchBytes, limit.binaryBytes, isolation, undefined, {
              bytes: ABORTED_HEADER_BYTES,
              cost: abortedHeaderCost,
            }),
          );
          return r;
        }
      : async () => {
          const batches = onlyPartition(
            await services.log.reader.readBatchesMany(fetches, fetchBytes, Infinity, isolation),
          );
          return { json: batches, bytes: batches.batches.byteLength, ...positionOf(batches) };
        };
    let result: Awaited<ReturnType<typeof read>> = await read();
    if (result.bytes < minBytes && maxWaitMs > 0) {
      // A read_committed fetch waits on the LSO (markers move it without moving the HW).
      const mark = (s: { highWatermark: number; logStartOffset: number; lastStableOffset: number }) =>
        `${s.highWatermark}/${s.logStartOffset}/${s.lastStableOffset}`;
      let seen = mark(result);
      const signal = c.req.raw.signal;
      try {
        result = await delayedFetch({
          purgatory: services.fetchPurgatory,
          keys: [partitionWatchKey(topic.name, partition)],
          minBytes,
          maxWaitMs,
          initial: result,
          signal,
          // One state read per wake-up; the records are read again only when the HW (or start) moved.
          poll: async () => {
            const s = await services.log.state(topic, partition);
            const now = mark({ ...s, lastStableOffset: lastStableOffset(s) });
            if (now === seen) return undefined;
            seen = now;
            return read();
          },
        });
      } catch (e) {
        if (!signal.aborted) throw e;
        return c.body(null, 204); // the client has gone; nobody reads this
      }
    }
    services.metrics.add('FetchBytes', result.bytes);
    c.set('responseBytes', result.bytes); // what consumer_byte_rate counts
    if (!('json' in result)) {
      services.metrics.add('FetchRecords', result.recordCount);
      return recordBatchResponse(c, result);
    }
    const head = `{"kind":"KafkaRecordList","cluster_id":${JSON.stringify(services.clusterId)},"topic_name":${JSON.stringify(topic.name)},"partition_id":${partition},"records":[`;
    const { body, shown } = recordList(head, result.json, offset, isolation, partition, format, limit.jsonBytes);
    services.metrics.add('FetchRecords', shown);
    return c.body(body, 200, { 'Content-Type': 'application/json' });
  });

  return app;
}
