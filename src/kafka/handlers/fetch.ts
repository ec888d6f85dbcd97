/**
 * Fetch: the stored batches, as PartitionLog.readBatches answers them (whole v2 batches with
 * absolute offsets), up to the request's and each partition's max bytes. With min bytes and max
 * wait it is a long poll in the fetch purgatory (src/timer/delayed-fetch.ts), completed by this
 * process's appends at once and re-checked on the purgatory's back-off for other processes'.
 * read_committed reads up to the last stable offset and lists the aborted transactions among the
 * batches, for the consumer to filter. There are no fetch sessions (KIP-227): a session id of 0
 * tells clients to send full requests. From v13 topics are named by id, in the request and the
 * answer (KIP-516): an id no topic has is UNKNOWN_TOPIC_ID, and the client refreshes its metadata.
 */
import { KafkaError } from '../../wire/errors.js';
import type { IsolationLevel } from '../../log/partition-log.js';
import type { Topic } from '../../topics/topics.js';
import { delayedFetch, partitionWatchKey } from '../../timer/delayed-fetch.js';
import { deniedAmong } from './access.js';
import { errorCodeOf, type Handler, type RequestContext } from './context.js';
import { topicIdString } from './topic-ids.js';

interface FetchPartition {
  partition: number;
  currentLeaderEpoch: number;
  fetchOffset: number;
  partitionMaxBytes: number;
}

interface Wanted {
  topic: string;
  /** v13+: the id the request named the topic by, echoed in the answer. */
  topicId?: Uint8Array;
  resolved?: Topic;
  error?: unknown;
  partitions: FetchPartition[];
}

interface PartitionData {
  partitionIndex: number;
  errorCode: number;
  highWatermark: number;
  lastStableOffset: number;
  logStartOffset: number;
  abortedTransactions: { producerId: number; firstOffset: number }[] | null;
  preferredReadReplica: number;
  records: Uint8Array | null;
}

const errorData = (ctx: RequestContext, partition: number, e: unknown): PartitionData => ({
  partitionIndex: partition,
  errorCode: errorCodeOf(ctx, e),
  highWatermark: -1,
  lastStableOffset: -1,
  logStartOffset: -1,
  abortedTransactions: null,
  preferredReadReplica: -1,
  records: null,
});

export const fetch: Handler = async (ctx, req, version) => {
  const { services } = ctx;
  if (req.sessionId !== 0) {
    return {
      throttleTimeMs: 0,
      errorCode: new KafkaError('FETCH_SESSION_ID_NOT_FOUND', '').code,
      sessionId: 0,
      responses: [],
    };
  }
  const topicsIn = await namedTopics(ctx, req.topics, version);
  const deniedTopics = await deniedAmong(
    ctx,
    'READ',
    'TOPIC',
    topicsIn.flatMap((t) => (t.error ? [] : [t.topic])),
  );
  const wanted: Wanted[] = await Promise.all(
    topicsIn.map(async (t): Promise<Wanted> => {
      if (t.error) return t;
      // A refused topic is not read, whether named or found by id (resolved already).
      const refused = deniedTopics.get(t.topic);
      if (refused) return { ...t, resolved: undefined, error: refused };
      try {
        return { ...t, resolved: t.resolved ?? (await services.topics.get(t.topic)) };
      } catch (error) {
        return { ...t, error };
      }
    }),
  );
  const maxBytes = Math.max(1, Math.min(req.maxBytes, services.limits.maxFetchBytes));
  // read_committed (1): up to the last stable offset, with the aborted transactions to filter.
  const isolation: IsolationLevel = req.isolationLevel === 1 ? 'read_committed' : 'read_uncommitted';

  const readAll = async () => {
    // Partitions are read in parallel, then kept in the request's order (its priority, as in
    // Kafka) while the response's max bytes allows; the first non-empty one is always kept whole.
    const reads = await Promise.all(
      wanted.map((w) =>
        Promise.all(
          w.partitions.map(async (p): Promise<PartitionData> => {
            if (!w.resolved || w.error) return errorData(ctx, p.partition, w.error);
            try {
              const r = await services.log.reader.readBatches(
                w.resolved,
                p.partition,
                p.fetchOffset,
                Math.max(1, Math.min(p.partitionMaxBytes, maxBytes)),
                { isolation, currentLeaderEpoch: p.currentLeaderEpoch },
              );
              return {
                ...emptyData(p.partition, r.highWatermark, r.logStartOffset),
                lastStableOffset: r.lastStableOffset,
                abortedTransactions: r.abortedTransactions
                  ? r.abortedTransactions.map((a) => ({ producerId: a.producerId, firstOffset: a.firstOffset }))
                  : null,
                records: r.batches,
              };
            } catch (e) {
              return errorData(ctx, p.partition, e);
            }
          }),
        ),
      ),
    );
    let bytes = 0;
    let failed = false;
    const seen: number[] = [];
    const responses = wanted.map((w, i) => ({
      topic: w.topic,
      topicId: w.topicId,
      partitions: reads[i]!.map((d) => {
        if (w.resolved) seen.push(d.highWatermark);
        if (d.errorCode !== 0) failed = true;
        const size = d.records?.byteLength ?? 0;
        if (size > 0 && bytes > 0 && bytes + size > maxBytes) return { ...d, records: new Uint8Array(0) };
        bytes += size;
        return d;
      }),
    }));
    return { responses, bytes, seen, failed };
  };

  let result = await readAll();
  const maxWaitMs = Math.min(req.maxWaitMs, services.limits.maxFetchWaitMs);
  // As Kafka's ReplicaManager.fetchMessages, an error in any partition (OFFSET_OUT_OF_RANGE past
  // the log end, an unknown topic, ...) answers at once: the client acts on it instead of waiting.
  if (result.bytes < req.minBytes && maxWaitMs > 0 && !result.failed) {
    const targets = wanted.flatMap((w) =>
      w.resolved ? w.partitions.map((p) => ({ topic: w.resolved!, partition: p.partition })) : [],
    );
    if (targets.length > 0) {
      let seen = result.seen;
      result = await delayedFetch({
        purgatory: services.fetchPurgatory,
        keys: targets.map((t) => partitionWatchKey(t.topic.name, t.partition)),
        minBytes: req.minBytes,
        maxWaitMs,
        initial: result,
        answersNow: (r) => r.failed,
        signal: ctx.signal,
        // One state read per partition per wake-up; the records are read again only when a HW moved.
        poll: async () => {
          const hws = await Promise.all(
            targets.map((t) =>
              services.log.state(t.topic, t.partition).then(
                (s) => s.highWatermark,
                () => -1,
              ),
            ),
          );
          if (hws.every((hw, i) => hw === seen[i])) return undefined;
          const next = await readAll();
          seen = next.seen;
          return next;
        },
      }).catch((e: unknown) => {
        if (ctx.signal.aborted) return result; // the connection is gone; nobody reads the answer
        throw e;
      });
    }
  }
  return { throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses: result.responses };
};

function emptyData(partition: number, highWatermark: number, logStartOffset: number): PartitionData {
  return {
    partitionIndex: partition,
    errorCode: 0,
    highWatermark,
    lastStableOffset: highWatermark,
    logStartOffset,
    abortedTransactions: null,
    preferredReadReplica: -1,
    records: new Uint8Array(0),
  };
}

/**
 * The request's topics with their names: as given up to v12; from v13 by id, resolved through the
 * registry (one listing at most, for ids it has not cached), an unknown id UNKNOWN_TOPIC_ID.
 */
async function namedTopics(
  ctx: RequestContext,
  topics: { topic: string; topicId: Uint8Array; partitions: FetchPartition[] }[],
  version: number,
): Promise<Wanted[]> {
  if (version < 13) return topics.map((t) => ({ topic: t.topic, partitions: t.partitions }));
  let byId: Map<string, Topic>;
  try {
    byId = await ctx.services.topics.getByIds(topics.map((t) => topicIdString(t.topicId)));
  } catch (error) {
    return topics.map((t) => ({ topic: '', topicId: t.topicId, error, partitions: t.partitions }));
  }
  return topics.map((t) => {
    const id = topicIdString(t.topicId);
    const topic = byId.get(id);
    return topic
      ? { topic: topic.name, topicId: t.topicId, resolved: topic, partitions: t.partitions }
      : {
          topic: '',
          topicId: t.topicId,
          error: new KafkaError('UNKNOWN_TOPIC_ID', `No topic has the id ${id}`),
          partitions: t.partitions,
        };
  });
}
