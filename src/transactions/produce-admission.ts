/**
 * Produce admission: the rules every produce passes before and while it is appended, for both
 * doors (the HTTP routes and the Kafka listener), written once. Kafka splits them the same way:
 * KafkaApis.handleProduceRequest authorizes (`admitProduce`), and ReplicaManager.appendRecords
 * verifies a transactional producer's partitions and appends (`appendProduced`).
 */
import type { AppendOutcome, PartitionAppend, PartitionLog } from '../log/partition-log.js';
import type { Topic } from '../topics/topics.js';
import { KafkaError } from '../wire/errors.js';
import type { Acks } from '../wire/protocol.js';
import type { ProducerRef, TransactionCoordinator } from './transaction-coordinator.js';

/**
 * A transactional produce (one that names its transactional id) waits for every in-sync replica
 * (INVALID_REQUIRED_ACKS otherwise) and needs WRITE on its transactional id, which the door checks
 * its own way (`authorize` throws its authorization error). A produce without one passes.
 */
export async function admitProduce(
  request: { acks: Acks | undefined; transactionalId: string | undefined },
  authorize: (transactionalId: string) => Promise<void>,
): Promise<void> {
  const { acks, transactionalId } = request;
  if (transactionalId === undefined) return;
  if (acks !== undefined && acks !== 'all')
    throw new KafkaError('INVALID_REQUIRED_ACKS', 'A transactional produce needs acks=all (-1)');
  await authorize(transactionalId);
}

/** What one admitted produce appends: one producer's (or no producer's) batches, per topic. */
export interface ProducedAppends {
  acks: Acks;
  /** The produce's transactional id: its batches are transactional, and only they (the door checked). */
  transactionalId?: string;
  producer?: ProducerRef;
  /**
   * One append (one object) per topic; `baseSequences`: the producer's first sequence per partition;
   * `spare`: memory the object may be laid out in (PartitionLog's AppendOptions).
   */
  topics: { topic: Topic; appends: PartitionAppend[]; baseSequences?: Map<number, number>; spare?: Uint8Array }[];
}

/**
 * Appends an admitted produce. A transactional producer is verified first, once for the whole
 * produce (KIP-890: it is the id's current producer, and every partition it appends to joins its
 * transaction, one conditional write at most); if the coordinator refuses, nothing is appended
 * and `refused` holds its error, which every partition's outcome also carries. The outcomes come
 * per topic, in the order given (a topic with nothing to append has none).
 */
export async function appendProduced(
  services: { log: PartitionLog; transactions: TransactionCoordinator },
  produced: ProducedAppends,
): Promise<{ outcomes: Map<number, AppendOutcome>[]; refused?: KafkaError }> {
  const { transactionalId, producer } = produced;
  const topics = produced.topics.filter((t) => t.appends.length > 0);
  if (transactionalId !== undefined && producer && topics.length > 0) {
    try {
      await services.transactions.verifyProduce(
        transactionalId,
        producer,
        topics.flatMap((t) => t.appends.map((a) => ({ topic: t.topic.name, partition: a.partition }))),
      );
    } catch (e) {
      if (!(e instanceof KafkaError)) throw e;
      const failed: AppendOutcome = { ok: false, error: e };
      return {
        outcomes: produced.topics.map((t) => new Map(t.appends.map((a) => [a.partition, failed]))),
        refused: e,
      };
    }
  }
  const outcomes = await Promise.all(
    produced.topics.map((t) =>
      t.appends.length === 0
        ? new Map<number, AppendOutcome>()
        : services.log.append(t.topic, t.appends, {
            acks: produced.acks,
            ...(t.spare ? { spare: t.spare } : {}),
            ...(producer
              ? {
                  producer: {
                    producerId: producer.producerId,
                    producerEpoch: producer.producerEpoch,
                    baseSequences: t.baseSequences ?? new Map(),
                    ...(transactionalId !== undefined ? { transactional: true } : {}),
                  },
                }
              : {}),
          }),
    ),
  );
  return { outcomes };
}
