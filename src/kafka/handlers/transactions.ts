/**
 * The transaction APIs over the transaction coordinator (src/transactions), the one the HTTP
 * routes use: AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn. Each checks WRITE on
 * the transactional id first (Kafka's order), then the group and topics it names. Kafka's
 * FindCoordinator for a transactional id answers this listener (handlers/groups.ts), and
 * InitProducerId with one goes to the coordinator's init (handlers/offsets.ts).
 */
import { KafkaError } from '../../wire/errors.js';
import type { Topic } from '../../topics/topics.js';
import { authorize, deniedAmong } from './access.js';
import { errorCodeOf, type Handler, type RequestContext } from './context.js';

/**
 * KIP-588: clients older than these versions know no PRODUCER_FENCED; Kafka answers them
 * INVALID_PRODUCER_EPOCH, which they treat as fatal the same way.
 */
const PRODUCER_FENCED_SINCE: Record<string, number> = {
  InitProducerId: 4,
  AddPartitionsToTxn: 2,
  AddOffsetsToTxn: 2,
  EndTxn: 2,
  TxnOffsetCommit: 3,
};
const PRODUCER_FENCED = new KafkaError('PRODUCER_FENCED', '').code;
const INVALID_PRODUCER_EPOCH = new KafkaError('INVALID_PRODUCER_EPOCH', '').code;

export function txnErrorCode(ctx: RequestContext, api: string, version: number, e: unknown): number {
  const code = errorCodeOf(ctx, e);
  return code === PRODUCER_FENCED && version < (PRODUCER_FENCED_SINCE[api] ?? 0) ? INVALID_PRODUCER_EPOCH : code;
}

const operationNotAttempted = () => new KafkaError('OPERATION_NOT_ATTEMPTED', '').code;

export const addPartitionsToTxn: Handler = async (ctx, req, version) => {
  const id = req.v3AndBelowTransactionalId as string;
  const topicsIn = req.v3AndBelowTopics as { name: string; partitions: number[] }[];
  const producer = { producerId: req.v3AndBelowProducerId, producerEpoch: req.v3AndBelowProducerEpoch };
  /** One code for every partition, or per topic; the others are not attempted, as Kafka answers. */
  const answer = (codeOf: (topic: string) => number) => ({
    throttleTimeMs: 0,
    resultsByTopicV3AndBelow: topicsIn.map((t) => ({
      name: t.name,
      resultsByPartition: t.partitions.map((p) => ({ partitionIndex: p, partitionErrorCode: codeOf(t.name) })),
    })),
  });
  try {
    await authorize(ctx, 'WRITE', 'TRANSACTIONAL_ID', id);
    const refused = await deniedAmong(
      ctx,
      'WRITE',
      'TOPIC',
      topicsIn.map((t) => t.name),
    );
    if (refused.size > 0) return answer((t) => refused.get(t)?.code ?? operationNotAttempted());
    const unknown = new Map<string, number>();
    await Promise.all(
      topicsIn.map(async (t) => {
        let topic: Topic | undefined;
        try {
          topic = await ctx.services.topics.get(t.name);
        } catch (e) {
          unknown.set(t.name, errorCodeOf(ctx, e));
          return;
        }
        if (t.partitions.some((p) => !Number.isInteger(p) || p < 0 || p >= topic.partitionCount))
          unknown.set(t.name, new KafkaError('UNKNOWN_TOPIC_OR_PARTITION', '').code);
      }),
    );
    if (unknown.size > 0) return answer((t) => unknown.get(t) ?? operationNotAttempted());
    await ctx.services.transactions.addPartitions(
      id,
      producer,
      topicsIn.flatMap((t) => t.partitions.map((partition) => ({ topic: t.name, partition }))),
    );
    return answer(() => 0);
  } catch (e) {
    const code = txnErrorCode(ctx, 'AddPartitionsToTxn', version, e);
    return answer(() => code);
  }
};

/** The group joins the transaction: its offsets (TxnOffsetCommit) are written when it commits. */
export const addOffsetsToTxn: Handler = async (ctx, req, version) => {
  try {
    await authorize(ctx, 'WRITE', 'TRANSACTIONAL_ID', req.transactionalId);
    await authorize(ctx, 'READ', 'GROUP', req.groupId);
    await ctx.services.transactions.commitOffsets(
      req.transactionalId,
      { producerId: req.producerId, producerEpoch: req.producerEpoch },
      req.groupId,
      [],
    );
    return { throttleTimeMs: 0, errorCode: 0 };
  } catch (e) {
    return { throttleTimeMs: 0, errorCode: txnErrorCode(ctx, 'AddOffsetsToTxn', version, e) };
  }
};

type TxnCommitPartition = { partitionIndex: number; committedOffset: number; committedMetadata: string | null };

/**
 * The offsets wait in the transaction and reach the group when it commits. From v3 the consumer's
 * member id and generation are checked (KIP-447), so a zombie's commit is fenced: against the
 * classic group when it has one, else against the HTTP API's (KIP-848) group.
 */
export const txnOffsetCommit: Handler = async (ctx, req, version) => {
  const topicsIn = req.topics as { name: string; partitions: TxnCommitPartition[] }[];
  const answer = (codeOf: (topic: string) => number) => ({
    throttleTimeMs: 0,
    topics: topicsIn.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: codeOf(t.name) })),
    })),
  });
  try {
    await authorize(ctx, 'WRITE', 'TRANSACTIONAL_ID', req.transactionalId);
    await authorize(ctx, 'READ', 'GROUP', req.groupId);
    const refused = await deniedAmong(
      ctx,
      'READ',
      'TOPIC',
      topicsIn.map((t) => t.name),
    );
    if (refused.size > 0) return answer((t) => refused.get(t)?.code ?? operationNotAttempted());
    let member: { memberId: string; generation: number } | undefined;
    if (req.generationId >= 0 || req.memberId !== '') {
      if (await ctx.classic.describe(req.groupId))
        await ctx.classic.checkCommit(req.groupId, req.memberId, req.generationId, req.groupInstanceId);
      else member = { memberId: req.memberId, generation: req.generationId };
    }
    await ctx.services.transactions.commitOffsets(
      req.transactionalId,
      { producerId: req.producerId, producerEpoch: req.producerEpoch },
      req.groupId,
      topicsIn.flatMap((t) =>
        t.partitions.map((p) => ({
          topic: t.name,
          partition: p.partitionIndex,
          offset: p.committedOffset,
          metadata: p.committedMetadata ?? '',
        })),
      ),
      member,
    );
    return answer(() => 0);
  } catch (e) {
    const code = txnErrorCode(ctx, 'TxnOffsetCommit', version, e);
    return answer(() => code);
  }
};

/** Commit or abort, carried through (markers, offsets) before the answer. */
export const endTxn: Handler = async (ctx, req, version) => {
  try {
    await authorize(ctx, 'WRITE', 'TRANSACTIONAL_ID', req.transactionalId);
    await ctx.services.transactions.end(
      req.transactionalId,
      { producerId: req.producerId, producerEpoch: req.producerEpoch },
      req.committed,
    );
    return { throttleTimeMs: 0, errorCode: 0 };
  } catch (e) {
    return { throttleTimeMs: 0, errorCode: txnErrorCode(ctx, 'EndTxn', version, e) };
  }
};
