/**
 * Dead-letter copies (KIP-1191): in a share group with `errors.deadletterqueue.topic.name`, a record
 * done with (rejected, or past the delivery count limit) is `archiving` until its copy is in the
 * dead-letter topic, then `archived`.
 *
 * Exactly once under retries and deaths: the conditional write that moves a record to archiving
 * also gives it the next sequence of the share-partition's own idempotent producer (kept in the
 * item). Whoever produces the copy (the writer that archived it, or the next writer of the item if
 * that one died) sends it as that producer with that sequence to one dead-letter partition (the
 * source partition modulo the topic's partitions), so a repeat after a lost answer is answered by
 * the log's idempotence as a duplicate and never appended twice. The record leaves archiving only
 * after a produce was answered, so a lost answer or a death leads to another attempt, never a loss.
 * Copies are produced in sequence order; one that finds a gap (a lower one still being produced by
 * another writer) is left to the next writer. When the producer's state is gone from the
 * dead-letter partition (the topic changed or was recreated, or the producer expired), the
 * share-partition takes a new producer and numbers its archiving records again from 0.
 */
import type { Clock } from '../clock.js';
import type { PartitionLog } from '../log/partition-log.js';
import { updateSharePartition } from './share-partition-update.js';
import type { MetadataStore } from '../storage/ports.js';
import type { Topic, TopicMeta, TopicRegistry } from '../topics/topics.js';
import { KafkaError, type KafkaErrorName } from '../wire/errors.js';
import type { DecodedRecord, LogRecord, RecordHeader } from '../wire/record-batch.js';
import type { ShareGroupConfig } from './share-config.js';
import {
  advanceStart,
  copyState,
  sequenceArchiving,
  type DeadLetterProducer,
  type InFlightRecord,
  type SharePartitionState,
} from './share-partition.js';

/** InitProducerId, as the composition root hands it over (src/producer). */
export interface ProducerIdSource {
  init(): Promise<{ producerId: number; producerEpoch: number }>;
}

export interface DeadLetterDeps {
  metadata: MetadataStore;
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  producerIds: ProducerIdSource;
}

/** The context headers of a copy: the group, where the record was, how often it was delivered, why. */
export const DLQ_HEADERS = {
  group: '__dlq.errors.group.id',
  topic: '__dlq.errors.topic',
  partition: '__dlq.errors.partition',
  offset: '__dlq.errors.offset',
  deliveries: '__dlq.errors.delivery.count',
  reason: '__dlq.errors.reason',
} as const;

/** A fresh producer for a share-partition's copies. */
export async function newDeadLetterProducer(producerIds: ProducerIdSource): Promise<DeadLetterProducer> {
  return { ...(await producerIds.init()), nextSequence: 0 };
}

/** The producer has no usable state in the dead-letter partition: a new one numbers the copies again. */
const LOST_PRODUCER: readonly KafkaErrorName[] = [
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
];

/**
 * Produces the copies of the share-partition's archiving records (as `state` holds them) and marks
 * those produced archived, in one conditional write. Resolves once done; what it could not produce
 * stays archiving for the next writer.
 */
export async function produceDeadLetters(
  deps: DeadLetterDeps,
  group: string,
  topic: TopicMeta,
  partition: number,
  state: SharePartitionState,
  config: ShareGroupConfig,
  readRecords: (offsets: number[]) => Promise<Map<number, DecodedRecord>>,
  again = true,
): Promise<void> {
  const pending = state.records
    .filter((r): r is InFlightRecord & { dlqSeq: number } => r.state === 'archiving' && r.dlqSeq !== undefined)
    .sort((a, b) => a.dlqSeq - b.dlqSeq);
  const producer = state.dlq;
  if (pending.length === 0 || !producer) return;
  const target = config.deadLetterTopic
    ? await deps.topics.get(config.deadLetterTopic).catch(() => undefined)
    : undefined;
  const produced = new Set<number>();
  let renumber = false;
  if (!target) {
    // No dead-letter topic (any more): archived without a copy, as without the option.
    for (const r of pending) produced.add(r.offset);
  } else {
    const dlqPartition = partition % target.partitionCount;
    const records = config.deadLetterCopyRecord ? await readRecords(pending.map((r) => r.offset)) : new Map();
    for (const r of pending) {
      const error = await appendCopy(
        deps,
        target,
        dlqPartition,
        producer,
        r,
        copyOf(group, topic, partition, r, records, deps.clock.now()),
      );
      if (error === undefined || error === 'DUPLICATE_SEQUENCE_NUMBER') {
        produced.add(r.offset);
        continue;
      }
      // The lowest pending sequence refused: the producer's state is gone there, not a gap.
      renumber = r === pending[0] && LOST_PRODUCER.includes(error);
      break;
    }
  }
  if (produced.size === 0 && !renumber) return;
  let fresh: DeadLetterProducer | undefined;
  const { item } = await updateSharePartition<boolean>(deps.metadata, group, topic.name, partition, {
    decide: async (found) => {
      if (!found || found.value.topicId !== topic.id) return { done: false };
      const s = copyState(found.value);
      let changed = false;
      for (const r of s.records)
        if (r.state === 'archiving' && produced.has(r.offset)) {
          r.state = 'archived';
          r.why = undefined;
          r.dlqSeq = undefined;
          changed = true;
        }
      // Renumbered once: another writer that saw the same refusal may have done it already.
      if (renumber && s.dlq?.producerId === producer.producerId) {
        fresh ??= await newDeadLetterProducer(deps.producerIds);
        s.dlq = { ...fresh };
        for (const r of s.records) r.dlqSeq = undefined;
        sequenceArchiving(s);
        changed = true;
      }
      if (!changed) return { done: false };
      advanceStart(s, -1);
      return { write: s, answer: () => true };
    },
    // Marking archived and renumbering are the same change however often applied.
    recognise: (found, _attempted, retried) =>
      retried && found && !found.value.records.some((r) => r.state === 'archiving' && produced.has(r.offset))
        ? true
        : undefined,
  });
  if (renumber && again && item) {
    await produceDeadLetters(deps, group, topic, partition, item.value, config, readRecords, false);
  }
}

/** One copy as its own batch (producer, sequence): undefined when appended, else the error's name. */
async function appendCopy(
  deps: DeadLetterDeps,
  target: Topic,
  dlqPartition: number,
  producer: DeadLetterProducer,
  r: InFlightRecord & { dlqSeq: number },
  record: LogRecord,
): Promise<KafkaErrorName | undefined> {
  try {
    const outcome = (
      await deps.log.append(target, [{ partition: dlqPartition, records: [record] }], {
        acks: 'all',
        producer: {
          producerId: producer.producerId,
          producerEpoch: producer.producerEpoch,
          baseSequences: new Map([[dlqPartition, r.dlqSeq]]),
        },
      })
    ).get(dlqPartition);
    return !outcome || outcome.ok ? undefined : outcome.error.errorName;
  } catch (e) {
    if (e instanceof KafkaError) return e.errorName;
    throw e;
  }
}

function copyOf(
  group: string,
  topic: TopicMeta,
  partition: number,
  r: InFlightRecord,
  records: Map<number, DecodedRecord>,
  /** The copy's timestamp: when the record was given up on. */
  now: number,
): LogRecord {
  const text = (v: string | number) => new TextEncoder().encode(String(v));
  const context: RecordHeader[] = [
    { key: DLQ_HEADERS.group, value: text(group) },
    { key: DLQ_HEADERS.topic, value: text(topic.name) },
    { key: DLQ_HEADERS.partition, value: text(partition) },
    { key: DLQ_HEADERS.offset, value: text(r.offset) },
    { key: DLQ_HEADERS.deliveries, value: text(r.deliveries) },
    { key: DLQ_HEADERS.reason, value: text(r.why === 'rejected' ? 'rejected' : 'delivery_count_limit') },
  ];
  const original = records.get(r.offset);
  return original
    ? { key: original.key, value: original.value, headers: [...original.headers, ...context], timestamp: now }
    : { key: null, value: null, headers: context, timestamp: now };
}
