/** ListOffsets, OffsetForLeaderEpoch, DeleteRecords and InitProducerId. */
import { KafkaError } from '../../wire/errors.js';
import { logEndOffset } from '../../partition/partition-state.js';
import type { IsolationLevel, OffsetSpec } from '../../log/partition-log.js';
import type { Topic } from '../../topics/topics.js';
import { checkCurrentLeaderEpoch, epochAt, epochEndOffset } from '../../partition/epoch-history.js';
import type { Operation } from '../../authz/acl.js';
import { authorize, authorizeIdempotentWrite, deniedAmong } from './access.js';
import { txnErrorCode } from './transactions.js';
import { errorCodeOf, settle, type Handler, type RequestContext } from './context.js';

/**
 * Resolves each named topic once, after checking the operation on it; a denied or missing one
 * fails its partitions, not the request.
 */
async function perPartition<P extends { partitionIndex?: number; partition?: number }, R>(
  ctx: RequestContext,
  operation: Operation,
  topics: { name: string; partitions: P[] }[],
  run: (topic: Topic, p: P) => Promise<R>,
  onError: (p: P, code: number) => R,
): Promise<{ name: string; partitions: R[] }[]> {
  const deniedTopics = await deniedAmong(
    ctx,
    operation,
    'TOPIC',
    topics.map((t) => t.name),
  );
  return Promise.all(
    topics.map(async (t) => {
      let topic: Topic;
      try {
        const refused = deniedTopics.get(t.name);
        if (refused) throw refused;
        topic = await ctx.services.topics.get(t.name);
      } catch (e) {
        const code = errorCodeOf(ctx, e);
        return { name: t.name, partitions: t.partitions.map((p) => onError(p, code)) };
      }
      return {
        name: t.name,
        partitions: await settle(
          t.partitions,
          (p) => run(topic, p),
          (p, e) => onError(p, errorCodeOf(ctx, e)),
        ),
      };
    }),
  );
}

/** Kafka's special timestamps: -1 the latest offset (HW), -2 the earliest (log start offset). */
function specOf(timestamp: number): OffsetSpec {
  if (timestamp === -1) return 'latest';
  if (timestamp === -2) return 'earliest';
  if (timestamp < 0)
    throw new KafkaError('UNSUPPORTED_VERSION', `ListOffsets timestamp ${timestamp} needs a newer version`);
  return { timestamp };
}

/**
 * The offset with the leader epoch it was written under (the current epoch for latest, as Kafka),
 * after checking the client's current leader epoch; read_committed's latest is the last stable
 * offset.
 */
export const listOffsets: Handler = async (ctx, req) => {
  type P = { partitionIndex: number; timestamp: number; currentLeaderEpoch: number };
  const isolation: IsolationLevel = req.isolationLevel === 1 ? 'read_committed' : 'read_uncommitted';
  const topics = await perPartition(
    ctx,
    'DESCRIBE',
    req.topics as { name: string; partitions: P[] }[],
    async (topic, p: P) => {
      const s = await ctx.services.log.state(topic, p.partitionIndex);
      checkCurrentLeaderEpoch(p.currentLeaderEpoch, s.leaderEpoch, `${topic.name}-${p.partitionIndex}`);
      const spec = specOf(p.timestamp);
      const r = await ctx.services.log.reader.listOffset(topic, p.partitionIndex, spec, isolation);
      return {
        partitionIndex: p.partitionIndex,
        errorCode: 0,
        oldStyleOffsets: r.offset >= 0 ? [r.offset] : [],
        timestamp: r.timestamp,
        offset: r.offset,
        leaderEpoch: r.offset < 0 ? -1 : spec === 'latest' ? s.leaderEpoch : epochAt(s.epochHistory, r.offset),
      };
    },
    (p, errorCode) => ({
      partitionIndex: p.partitionIndex,
      errorCode,
      oldStyleOffsets: [],
      timestamp: -1,
      offset: -1,
      leaderEpoch: -1,
    }),
  );
  return { throttleTimeMs: 0, topics };
};

export const offsetForLeaderEpoch: Handler = async (ctx, req) => {
  type P = { partition: number; currentLeaderEpoch: number; leaderEpoch: number };
  const topics = await perPartition(
    ctx,
    'DESCRIBE',
    (req.topics as { topic: string; partitions: P[] }[]).map((t) => ({ name: t.topic, partitions: t.partitions })),
    async (topic, p: P) => {
      const s = await ctx.services.log.state(topic, p.partition);
      checkCurrentLeaderEpoch(p.currentLeaderEpoch, s.leaderEpoch, `${topic.name}-${p.partition}`);
      return {
        errorCode: 0,
        partition: p.partition,
        ...epochEndOffset(s.epochHistory, p.leaderEpoch, logEndOffset(s)),
      };
    },
    (p, errorCode) => ({ errorCode, partition: p.partition, leaderEpoch: -1, endOffset: -1 }),
  );
  return { throttleTimeMs: 0, topics: topics.map((t) => ({ topic: t.name, partitions: t.partitions })) };
};

export const deleteRecords: Handler = async (ctx, req) => {
  type P = { partitionIndex: number; offset: number };
  const topics = await perPartition(
    ctx,
    'DELETE',
    req.topics as { name: string; partitions: P[] }[],
    async (topic, p: P) => {
      const target = p.offset === -1 ? (await ctx.services.log.state(topic, p.partitionIndex)).highWatermark : p.offset;
      const r = await ctx.services.log.advanceLogStartOffset(topic, p.partitionIndex, target);
      return { partitionIndex: p.partitionIndex, lowWatermark: r.logStartOffset, errorCode: 0 };
    },
    (p, errorCode) => ({ partitionIndex: p.partitionIndex, lowWatermark: -1, errorCode }),
  );
  return { throttleTimeMs: 0, topics };
};

/**
 * An idempotent producer's id (ProducerIds), or with a transactional id the transaction
 * coordinator's init: it finishes or aborts what the id's previous producer left and bumps the
 * epoch, fencing it. KIP-360: a producer that names its current id and epoch gets the next epoch.
 */
export const initProducerId: Handler = async (ctx, req, version) => {
  try {
    const existing = req.producerId >= 0 ? { producerId: req.producerId, producerEpoch: req.producerEpoch } : undefined;
    if (req.transactionalId !== null) {
      await authorize(ctx, 'WRITE', 'TRANSACTIONAL_ID', req.transactionalId);
      const r = await ctx.services.transactions.init(req.transactionalId, req.transactionTimeoutMs, existing);
      return { throttleTimeMs: 0, errorCode: 0, producerId: r.producerId, producerEpoch: r.producerEpoch };
    }
    await authorizeIdempotentWrite(ctx);
    const r = await ctx.services.producerIds.init(existing);
    return { throttleTimeMs: 0, errorCode: 0, producerId: r.producerId, producerEpoch: r.producerEpoch };
  } catch (e) {
    return {
      throttleTimeMs: 0,
      errorCode: txnErrorCode(ctx, 'InitProducerId', version, e),
      producerId: -1,
      producerEpoch: -1,
    };
  }
};
