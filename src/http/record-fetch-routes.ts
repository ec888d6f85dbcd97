/**
 * A partition's records, read over HTTP: the one route the fetch function serves (infra/routes.ts).
 * Apart from the produce routes (record-routes.ts) so that the fetch bundle holds none of their
 * body schemas or the transaction admission.
 */
import { Hono } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import { fetchedRecords, type FetchResult } from '../log/fetched-records.js';
import { onlyPartition } from '../log/partition-reader.js';
import { lastStableOffset } from '../partition/partition-state.js';
import { delayedFetch, partitionWatchKey } from '../timer/delayed-fetch.js';
import { ABORTED_HEADER_BYTES, answerLimit, jsonAnswerBytes } from './answer-limit.js';
import type { AppEnv } from './app-env.js';
import { isoTimestamps, OUTPUT_FORMATS, showRecordText, type OutputFormat } from './record-text.js';
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
 * The fetched records as JSON texts, as many as fit in `limitBytes` of answer (at least one; a
 * record that alone is over it is MESSAGE_TOO_LARGE, a bound the record-batch format does not
 * inflate), and the offset to fetch next: the first record left out, if any.
 */
function showWithin(
  result: FetchResult,
  partition: number,
  format: OutputFormat,
  limitBytes: number,
): { shown: string[]; nextOffset: number } {
  const shown: string[] = [];
  let bytes = 0;
  const iso = isoTimestamps();
  for (const r of result.records) {
    const text = showRecordText(r, partition, format, iso);
    if (limitBytes !== Infinity) {
      bytes += jsonAnswerBytes(text) + 1;
      if (bytes > limitBytes) {
        if (shown.length > 0) return { shown, nextOffset: r.offset };
        throw new KafkaError(
          'MESSAGE_TOO_LARGE',
          `The record at offset ${r.offset} takes more than this deployment can answer (${limitBytes} bytes) as ${format} JSON; fetch it as record batches`,
        );
      }
    }
    shown.push(text);
  }
  return { shown, nextOffset: result.nextOffset };
}

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
          return { ...r, count: r.recordCount };
        }
      : async () => {
          const batches = onlyPartition(
            await services.log.reader.readBatchesMany(fetches, fetchBytes, Infinity, isolation),
          );
          const r = fetchedRecords(batches, offset, isolation);
          return { ...r, count: r.records.length };
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
    services.metrics.add('FetchRecords', result.count);
    services.metrics.add('FetchBytes', result.bytes);
    c.set('responseBytes', result.bytes); // what consumer_byte_rate counts
    if ('batches' in result) return recordBatchResponse(c, result);
    const { shown, nextOffset } = showWithin(result, partition, format, limit.jsonBytes);
    // Sent as bytes: a multi-megabyte string answer would be UTF-8 encoded twice (Content-Length, then the write).
    const json =
      `{"kind":"KafkaRecordList","cluster_id":${JSON.stringify(services.clusterId)},"topic_name":${JSON.stringify(topic.name)},"partition_id":${partition},` +
      `"records":[${shown.join(',')}],"next_offset":${nextOffset},"high_watermark":${result.highWatermark},"log_start_offset":${result.logStartOffset},"last_stable_offset":${result.lastStableOffset}}`;
    return c.body(Buffer.from(json), 200, { 'Content-Type': 'application/json' });
  });

  return app;
}
