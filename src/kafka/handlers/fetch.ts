/**
 * Fetch: the stored batches, as the reader's readBatchesMany answers them (whole v2 batches with
 * absolute offsets), up to the request's and each partition's max bytes. With min bytes and max
 * wait it is a long poll in the fetch purgatory (src/timer/delayed-fetch.ts), completed by this
 * process's appends at once and re-checked on the purgatory's back-off for other processes'.
 * read_committed reads up to the last stable offset and lists the aborted transactions among the
 * batches, for the consumer to filter. There are no fetch sessions (KIP-227): a session id of 0
 * tells clients to send full requests. From v13 topics are named by id, in the request and the
 * answer (KIP-516): an id no topic has is UNKNOWN_TOPIC_ID, and the client refreshes its metadata.
 */
import { KafkaError } from '../../wire/errors.js';
import type { IsolationLevel, PartitionFetch } from '../../log/partition-log.js';
import { lastStableOffset, type PartitionState } from '../../partition/partition-state.js';
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

  // The request's partitions, in its order (its priority, as in Kafka): one read of all of them.
  // A partition named twice is read once; its repeats answer its state without records.
  const fetches: PartitionFetch[] = [];
  const slot = wanted.map((w) =>
    w.partitions.map((p) => {
      if (!w.resolved || w.error) return -1;
      const first = fetches.findIndex((f) => f.topic.name === w.topic && f.partition === p.partition);
      if (first >= 0) return -2 - first;
      fetches.push({
        topic: w.resolved,
        partition: p.partition,
        offset: p.fetchOffset,
        maxBytes: Math.max(1, p.partitionMaxBytes),
        currentLeaderEpoch: p.currentLeaderEpoch,
      });
      return fetches.length - 1;
    }),
  );

  /** Reads every partition in one call; `states`, just read by a poll, spare the reader reading them again. */
  const readAll = async (states?: (PartitionState | undefined)[]) => {
    // The reader keeps Kafka's rules across partitions: each within its partition max bytes, all
    // within the request's, only the first partition with data past it, by one batch (KIP-74).
    const outcomes =
      fetches.length > 0
        ? await services.log.reader.readBatchesMany(
            states ? fetches.map((f, i) => ({ ...f, state: states[i] })) : fetches,
            maxBytes,
            Infinity,
            isolation,
          )
        : [];
    let bytes = 0;
    let failed = false;
    const seen = outcomes.map((o) => (o.ok ? marks(o) : ''));
    const responses = wanted.map((w, i) => ({
      topic: w.topic,
      topicId: w.topicId,
      partitions: w.partitions.map((p, k): PartitionData => {
        const at = slot[i]![k]!;
        if (at === -1) {
          failed = true;
          return errorData(ctx, p.partition, w.error);
        }
        const o = outcomes[at < 0 ? -2 - at : at]!;
        if (!o.ok) {
          failed = true;
          return errorData(ctx, p.partition, o.error);
        }
        bytes += at < 0 ? 0 : o.bytes;
        return {
          ...emptyData(p.partition, o.highWatermark, o.logStartOffset),
          lastStableOffset: o.lastStableOffset,
          abortedTransactions: o.abortedTransactions
            ? o.abortedTransactions.map((a) => ({ producerId: a.producerId, firstOffset: a.firstOffset }))
            : null,
          records: at < 0 ? new Uint8Array(0) : o.batches,
        };
      }),
    }));
    return { responses, bytes, seen, failed };
  };

  let result = await readAll();
  const maxWaitMs = Math.min(req.maxWaitMs, services.limits.maxFetchWaitMs);
  // As Kafka's ReplicaManager.fetchMessages, an error in any partition (OFFSET_OUT_OF_RANGE past
  // the log end, an unknown topic, ...) answers at once: the client acts on it instead of waiting.
  if (result.bytes < req.minBytes && maxWaitMs > 0 && !result.failed) {
    if (fetches.length > 0) {
      let seen = result.seen;
      result = await delayedFetch({
        purgatory: services.fetchPurgatory,
        keys: fetches.map((f) => partitionWatchKey(f.topic.name, f.partition)),
        minBytes: req.minBytes,
        maxWaitMs,
        initial: result,
        answersNow: (r) => r.failed,
        signal: ctx.signal,
        // One state read per partition per wake-up; the records are read again, from those states,
        // only when a HW, log start or LSO moved (a marker moves the LSO alone).
        poll: async () => {
          const states = await Promise.all(
            fetches.map((f) => services.log.state(f.topic, f.partition).catch(() => undefined)),
          );
          if (states.every((s, i) => (s ? marks({ ...s, lastStableOffset: lastStableOffset(s) }) : '') === seen[i]))
            return undefined;
          const next = await readAll(states);
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

/** What a poll compares: an answer changes only when one of these moves. */
const marks = (s: { highWatermark: number; logStartOffset: number; lastStableOffset: number }) =>
  `${s.highWatermark}/${s.logStartOffset}/${s.lastStableOffset}`;

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
