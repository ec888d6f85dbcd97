/**
 * Produce: the record batches are checked in place (validateProducedBatches) and appended as sent,
 * one append (one object) per topic and producer, through the same PartitionLog as the HTTP
 * record-batch produce. acks=0 sends no answer, as Kafka does.
 *
 * Versions 0-2 carry magic 0/1 message sets, which Kafka 4.0 no longer takes (KIP-896). They are
 * listed in ApiVersions for librdkafka's sake (see the Produce definition) and every partition of
 * such a request is answered UNSUPPORTED_VERSION, so the client can say why; Kafka 4.0 itself
 * closes the connection there. With acks=0 there is no answer to carry the error: the connection
 * is closed after it, as Kafka does for a failed acks=0 produce.
 */
import { KafkaError } from '../../wire/errors.js';
import type { Acks } from '../../wire/protocol.js';
import { validateProducedBatches, type ProducedBatches } from '../../log/produced-batches.js';
import type { Topic } from '../../topics/topics.js';
import { admitProduce, appendProduced } from '../../transactions/produce-admission.js';
import { authorize, deniedAmong } from './access.js';
import { errorCodeOf, errorMessageOf, type Handler, type RequestContext } from './context.js';

interface PartitionAnswer {
  index: number;
  errorCode: number;
  baseOffset: number;
  logAppendTimeMs: number;
  logStartOffset: number;
  recordErrors: never[];
  errorMessage: string | null;
}

const failed = (ctx: RequestContext, index: number, e: unknown): PartitionAnswer => ({
  index,
  errorCode: errorCodeOf(ctx, e),
  baseOffset: -1,
  logAppendTimeMs: -1,
  logStartOffset: -1,
  recordErrors: [],
  errorMessage: errorMessageOf(e),
});

function acksOf(raw: number): Acks {
  if (raw === 0) return 0;
  if (raw === 1) return 1;
  if (raw === -1) return 'all';
  throw new KafkaError('INVALID_REQUIRED_ACKS', `acks must be 0, 1 or -1 (got ${raw})`);
}

/** The first Produce version with RecordBatch v2 (magic 2): the oldest this listener appends. */
export const MIN_PRODUCE_VERSION = 3;

export const produce: Handler = async (ctx, req, version) => {
  if (version < MIN_PRODUCE_VERSION) return refuseOldVersion(ctx, req, version);
  let acks: Acks | undefined;
  let acksError: unknown;
  const transactionalId = req.transactionalId as string | null;
  try {
    acks = acksOf(req.acks);
    await admitProduce({ acks, transactionalId: transactionalId ?? undefined }, (id) =>
      authorize(ctx, 'WRITE', 'TRANSACTIONAL_ID', id),
    );
  } catch (e) {
    acks = undefined;
    acksError = e;
  }
  const topicData = req.topicData as { name: string; partitionData: { index: number; records: Buffer | null }[] }[];
  const deniedTopics = await deniedAmong(
    ctx,
    'WRITE',
    'TOPIC',
    topicData.map((t) => t.name),
  );
  const responses = await Promise.all(
    topicData.map(async (t) => {
      const refused = acks === undefined ? acksError : deniedTopics.get(t.name);
      if (acks === undefined || refused)
        return { name: t.name, partitionResponses: t.partitionData.map((p) => failed(ctx, p.index, refused)) };
      let topic: Topic;
      try {
        topic = await ctx.services.topics.get(t.name);
      } catch (e) {
        return { name: t.name, partitionResponses: t.partitionData.map((p) => failed(ctx, p.index, e)) };
      }
      return {
        name: t.name,
        partitionResponses: await produceTopic(ctx, topic, t.partitionData, acks, transactionalId),
      };
    }),
  );
  if (acks === 0) return undefined;
  return { responses, throttleTimeMs: 0 };
};

function refuseOldVersion(ctx: RequestContext, req: { acks: number; topicData: unknown }, version: number) {
  if (req.acks === 0) {
    ctx.connection.closeAfterAnswer = true;
    return undefined;
  }
  const error = new KafkaError(
    'UNSUPPORTED_VERSION',
    `Produce v${version} (message format v0/v1) is not supported; this broker takes Produce v${MIN_PRODUCE_VERSION}+ (record batches v2)`,
  );
  const topicData = req.topicData as { name: string; partitionData: { index: number }[] }[];
  return {
    responses: topicData.map((t) => ({
      name: t.name,
      partitionResponses: t.partitionData.map((p) => failed(ctx, p.index, error)),
    })),
    throttleTimeMs: 0,
  };
}

async function produceTopic(
  ctx: RequestContext,
  topic: Topic,
  partitions: { index: number; records: Buffer | null }[],
  acks: Acks,
  transactionalId: string | null,
): Promise<PartitionAnswer[]> {
  const answers = new Map<number, PartitionAnswer>();
  // Appends grouped by producer: one idempotent producer's id and epoch per append call.
  const groups = new Map<
    string,
    { producer?: ProducedBatches['producer']; appends: { partition: number; batches: ProducedBatches }[] }
  >();
  const seen = new Set<number>();
  for (const p of partitions) {
    try {
      if (seen.has(p.index))
        throw new KafkaError('INVALID_REQUEST', `Partition ${p.index} appears twice in the request`);
      if (!Number.isInteger(p.index) || p.index < 0 || p.index >= topic.partitionCount) {
        throw new KafkaError(
          'UNKNOWN_TOPIC_OR_PARTITION',
          `Partition ${p.index} of topic ${topic.name} does not exist`,
        );
      }
      const batches = validateProducedBatches(p.records ?? new Uint8Array(0), {
        maxMessageBytes: topic.config.maxMessageBytes,
        requireKeys: topic.config.cleanupPolicy.compact,
      });
      // As Kafka's ProduceRequest: transactional batches come with a transactional id, and only they do.
      if ((transactionalId !== null) !== (batches.producer?.transactional === true))
        throw new KafkaError(
          'INVALID_RECORD',
          transactionalId === null
            ? 'A transactional batch needs the request to carry its transactional id'
            : 'A request with a transactional id takes only transactional batches',
        );
      const key = batches.producer ? `${batches.producer.producerId}:${batches.producer.producerEpoch}` : '';
      let g = groups.get(key);
      if (!g) {
        g = { ...(batches.producer ? { producer: batches.producer } : {}), appends: [] };
        groups.set(key, g);
      }
      g.appends.push({ partition: p.index, batches });
    } catch (e) {
      answers.set(p.index, failed(ctx, p.index, e));
    }
    seen.add(p.index);
  }
  await Promise.all(
    [...groups.values()].map(async (g) => {
      try {
        const { outcomes } = await appendProduced(ctx.services, {
          acks,
          ...(transactionalId !== null ? { transactionalId } : {}),
          ...(g.producer ? { producer: g.producer } : {}),
          topics: [
            {
              topic,
              appends: g.appends,
              ...(g.producer
                ? { baseSequences: new Map(g.appends.map((a) => [a.partition, a.batches.producer!.baseSequence])) }
                : {}),
            },
          ],
        });
        for (const [partition, o] of outcomes[0]!) {
          answers.set(
            partition,
            o.ok
              ? {
                  index: partition,
                  errorCode: 0,
                  baseOffset: o.info.baseOffset,
                  logAppendTimeMs: o.info.logAppendTime,
                  logStartOffset: o.info.logStartOffset,
                  recordErrors: [],
                  errorMessage: null,
                }
              : failed(ctx, partition, o.error),
          );
        }
      } catch (e) {
        for (const a of g.appends) answers.set(a.partition, failed(ctx, a.partition, e));
      }
    }),
  );
  // Every partition has its answer by now; the fallback (an Error, with its stack) is only built if one has none.
  return partitions.map(
    (p) => answers.get(p.index) ?? failed(ctx, p.index, new KafkaError('REQUEST_TIMED_OUT', 'not appended')),
  );
}
