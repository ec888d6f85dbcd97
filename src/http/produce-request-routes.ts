/**
 * Kafka's ProduceRequest over HTTP (extension): `POST /v3/clusters/{c}/records` with a body of
 * Kafka's `topic_data` (src/wire/produce-request.ts) carries the record batches of many partitions
 * of one or several topics in one request. Each topic's partitions are stored as one object (one
 * PUT per replica) and committed per partition; the answer is Kafka's ProduceResponse in JSON,
 * with an error per partition: one partition's failure does not fail the others. A transactional
 * producer's request names its transactional id (`?transactional_id=`, Kafka's ProduceRequest
 * field), and every partition of it joins the transaction before anything is appended.
 */
import { Hono, type Context } from 'hono';
import { KafkaError } from '../wire/errors.js';
import type { AppendOutcome, PartitionAppend } from '../log/partition-log.js';
import { decodeTopicData, PRODUCE_REQUEST_MEDIA_TYPE, type TopicData } from '../wire/produce-request.js';
import { authorize, authorizeAll } from './security.js';
import { validateProducedBatches, type ProducedBatches } from '../log/produced-batches.js';
import { requirePartition, type Topic } from '../topics/topics.js';
import type { AppEnv } from './app-env.js';
import type { AppServices } from '../services.js';
import { parseAcks } from './acks.js';
import { requireTransactionalBatches } from './record-batch-body.js';
import { admitProduce, appendProduced } from '../transactions/produce-admission.js';
import { requestHeader } from './incoming-header.js';
import { mediaType, readBody } from './request.js';
import type * as z from 'zod';
import type { produceResponseSchema } from './record-answers.js';

/**
 * One partition's answer, Kafka's PartitionProduceResponse (+ error name, last offset and
 * duplicate): as the document's schema says (record-answers.ts; a type only, not in the bundle).
 */
type PartitionProduceResponse = z.input<
  typeof produceResponseSchema
>['responses'][number]['partition_responses'][number];

/** A partition's error; anything but a KafkaError is ours and fails the request (a logged 500). */
function failed(index: number, e: unknown): PartitionProduceResponse {
  if (!(e instanceof KafkaError)) throw e;
  return {
    index,
    error_code: e.code,
    error: e.errorName,
    error_message: e.message,
    base_offset: -1,
    last_offset: -1,
    log_append_time_ms: -1,
    log_start_offset: -1,
  };
}

function answered(index: number, o: AppendOutcome): PartitionProduceResponse {
  if (!o.ok) return failed(index, o.error);
  const { info } = o;
  return {
    index,
    error_code: 0,
    base_offset: info.baseOffset,
    last_offset: info.lastOffset,
    log_append_time_ms: info.logAppendTime,
    log_start_offset: info.logStartOffset,
    ...(info.duplicate ? { duplicate: true } : {}),
    ...(info.placement
      ? { leader_id: info.placement.leader, leader_epoch: info.placement.leaderEpoch, isr: info.placement.isr }
      : {}),
  };
}

/** Every batch of a request comes from one producer (or none): the idempotence check runs per request. */
type Producer = ProducedBatches['producer'];
const sameProducer = (a: Producer, b: Producer) =>
  a?.producerId === b?.producerId && a?.producerEpoch === b?.producerEpoch;

/** One topic of the request, validated: what to append, and the partitions answered already. */
interface PreparedTopic {
  data: TopicData;
  topic?: Topic;
  answers: Map<number, PartitionProduceResponse>;
  appends: PartitionAppend[];
  baseSequences: Map<number, number>;
  producer: Producer;
}

/**
 * Validates one topic's partitions. As Kafka's ProduceRequest, transactional batches come with
 * the request's transactional_id and only they do: a partition that breaks this fails alone.
 */
async function prepareTopic(
  services: AppServices,
  data: TopicData,
  requestProducer: { value: Producer; set: boolean },
  transactionalId: string | undefined,
): Promise<PreparedTopic> {
  const prepared: PreparedTopic = {
    data,
    answers: new Map(),
    appends: [],
    baseSequences: new Map(),
    producer: undefined,
  };
  let topic: Topic;
  try {
    topic = await services.topics.get(data.name);
  } catch (e) {
    for (const p of data.partitions) prepared.answers.set(p.index, failed(p.index, e));
    return prepared;
  }
  prepared.topic = topic;
  for (const p of data.partitions) {
    try {
      requirePartition(topic, p.index);
      if (p.records === null) throw new KafkaError('INVALID_RECORD', `No records for ${topic.name}-${p.index}`);
      // Validated in place: the request body is this request's own buffer.
      const batches = validateProducedBatches(p.records, {
        maxMessageBytes: topic.config.maxMessageBytes,
        requireKeys: topic.config.cleanupPolicy.compact,
      });
      requireTransactionalBatches(transactionalId, batches);
      if (!requestProducer.set) Object.assign(requestProducer, { value: batches.producer, set: true });
      if (!sameProducer(batches.producer, requestProducer.value)) {
        throw new KafkaError(
          'INVALID_RECORD',
          'Every batch of a produce request must come from the same producer id and epoch (or none)',
        );
      }
      if (batches.producer) {
        prepared.producer = batches.producer;
        prepared.baseSequences.set(p.index, batches.producer.baseSequence);
      }
      prepared.appends.push({ partition: p.index, batches });
    } catch (e) {
      prepared.answers.set(p.index, failed(p.index, e));
    }
  }
  return prepared;
}

export function produceRequestRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.post('/records', async (c: Context<AppEnv>) => {
    const services = c.get('services');
    const type = mediaType(requestHeader(c, 'content-type'));
    if (type !== PRODUCE_REQUEST_MEDIA_TYPE) {
      throw new KafkaError(
        'UNSUPPORTED_MEDIA_TYPE',
        `This endpoint takes Kafka's ProduceRequest topic_data: Content-Type ${PRODUCE_REQUEST_MEDIA_TYPE}`,
      );
    }
    const acks = parseAcks(c);
    const topics = decodeTopicData(await readBody(c));
    const seen = new Set<string>();
    for (const t of topics) {
      for (const p of t.partitions) {
        const key = `${t.name}\0${p.index}`;
        if (seen.has(key))
          throw new KafkaError('INVALID_REQUEST', `Partition ${t.name}-${p.index} appears twice in the request`);
        seen.add(key);
      }
    }
    if (seen.size === 0) throw new KafkaError('INVALID_REQUEST', 'The request holds no partition');
    // Kafka's Produce needs WRITE on every topic of the request; the first one denied fails it whole.
    await authorizeAll(
      c,
      'WRITE',
      'TOPIC',
      topics.map((t) => t.name),
    );
    const transactionalId = c.req.query('transactional_id');
    await admitProduce({ acks, transactionalId }, (id) => authorize(c, 'WRITE', 'TRANSACTIONAL_ID', id));
    const requestProducer = { value: undefined as Producer, set: false };
    const prepared = await Promise.all(topics.map((t) => prepareTopic(services, t, requestProducer, transactionalId)));
    const producer = prepared.find((t) => t.producer)?.producer;
    // One object per topic; a transactional producer's partitions join its transaction first, all at once.
    const found = prepared.filter((t) => t.topic !== undefined);
    const { outcomes } = await appendProduced(services, {
      acks,
      ...(transactionalId !== undefined ? { transactionalId } : {}),
      ...(producer ? { producer } : {}),
      topics: found.map((t) => ({ topic: t.topic!, appends: t.appends, baseSequences: t.baseSequences })),
    });
    found.forEach((t, i) => {
      for (const [partition, o] of outcomes[i]!) t.answers.set(partition, answered(partition, o));
    });
    const responses = prepared.map((t) => ({
      name: t.data.name,
      partition_responses: t.data.partitions.map((p) => t.answers.get(p.index)!),
    }));
    return c.json({ kind: 'KafkaProduceResponse', cluster_id: services.clusterId, responses });
  });

  return app;
}
