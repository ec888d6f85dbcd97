import { KafkaError } from '../wire/errors.js';
import type { ProducerBatch, ProducerEntry } from './partition-state.js';
import { optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore } from '../storage/ports.js';
import { producerPartitionSk, producerPk } from '../storage/key-layout.js';

/**
 * Idempotent producer state per partition, as Kafka's ProducerStateManager keeps it.
 *
 * Two places hold it. The partition state item keeps each producer's LAST batch, written in the
 * same conditional write as the append, so the sequence check and the append are atomic: a retry
 * of the last batch (the usual case) is recognised without any other read. The producer item
 * (pk `pid#{id}`, sk `part#{topic}#{p}`) keeps the last five batches with their offsets, written
 * after the append, so an older duplicate (up to five in flight) is answered with its original
 * offsets too.
 */

/** Kafka keeps the sequences of the last five batches per producer and partition. */
export const BATCHES_KEPT = 5;
/** Producers idle longer than this leave the partition state (Kafka's producer.id.expiration.ms). */
export const PRODUCER_ID_EXPIRATION_MS = 86_400_000;
/** Bound on producers tracked in one partition state item (keeps the item small). */
export const MAX_PRODUCERS_PER_PARTITION = 500;

export type SequenceCheck = { kind: 'append' } | { kind: 'duplicate'; baseOffset: number; lastOffset: number } | { kind: 'older' };

/** Decides what an incoming batch is, given the producer's last batch in this partition. */
export function checkSequence(last: ProducerEntry | undefined, batch: ProducerBatch): SequenceCheck {
  const where = `producer ${batch.producerId} epoch ${batch.producerEpoch}`;
  if (last && batch.producerEpoch < last.producerEpoch) {
    throw new KafkaError('INVALID_PRODUCER_EPOCH', `${where} is fenced: epoch ${last.producerEpoch} has written to this partition`);
  }
  if (!last || batch.producerEpoch > last.producerEpoch) {
    if (batch.baseSequence !== 0) {
      throw new KafkaError('OUT_OF_ORDER_SEQUENCE_NUMBER', `${where}: the first batch of an epoch must have sequence 0, got ${batch.baseSequence}`);
    }
    return { kind: 'append' };
  }
  if (batch.baseSequence === last.baseSequence && batch.lastSequence === last.lastSequence) {
    return { kind: 'duplicate', baseOffset: last.baseOffset, lastOffset: last.lastOffset };
  }
  if (batch.baseSequence === last.lastSequence + 1) return { kind: 'append' };
  if (batch.lastSequence <= last.lastSequence) return { kind: 'older' };
  throw new KafkaError(
    'OUT_OF_ORDER_SEQUENCE_NUMBER',
    `${where}: expected sequence ${last.lastSequence + 1}, got ${batch.baseSequence} (a batch is missing)`,
  );
}

/** The partition state's producer map after an append, expired and bounded. */
export function recordProducerBatch(
  producers: Record<string, ProducerEntry> | undefined,
  batch: ProducerBatch,
  baseOffset: number,
  lastOffset: number,
  now: number,
): Record<string, ProducerEntry> {
  const entries = Object.entries(producers ?? {}).filter(([id, e]) => id !== String(batch.producerId) && now - e.updatedAt < PRODUCER_ID_EXPIRATION_MS);
  entries.sort((a, b) => b[1].updatedAt - a[1].updatedAt);
  const kept = entries.slice(0, MAX_PRODUCERS_PER_PARTITION - 1);
  return { ...Object.fromEntries(kept), [String(batch.producerId)]: { ...batch, baseOffset, lastOffset, updatedAt: now } };
}

interface ProducerPartitionItem {
  producerEpoch: number;
  batches: { baseSequence: number; lastSequence: number; baseOffset: number; lastOffset: number }[];
}


export class ProducerBatchLog {
  constructor(private readonly metadata: MetadataStore) {}

  /** The original offsets of an older duplicate batch, if it is among the last five. */
  async findDuplicate(topic: string, partition: number, batch: ProducerBatch): Promise<{ baseOffset: number; lastOffset: number } | undefined> {
    const item = await this.metadata.get<ProducerPartitionItem>(producerPk(batch.producerId), producerPartitionSk(topic, partition));
    if (!item || item.value.producerEpoch !== batch.producerEpoch) return undefined;
    return item.value.batches.find((b) => b.baseSequence === batch.baseSequence && b.lastSequence === batch.lastSequence);
  }

  /**
   * Adds an appended batch to the producer item (conditional; a lost race is retried). Adding the
   * same batch again is harmless, so a repeat after an ambiguous outcome needs no recognition. Best
   * effort: the partition state's producer entry is what sequence checks rely on first.
   */
  async record(topic: string, partition: number, batch: ProducerBatch, baseOffset: number, lastOffset: number): Promise<void> {
    await optimisticUpdate<ProducerPartitionItem, undefined>({
      metadata: this.metadata,
      pk: producerPk(batch.producerId),
      sk: producerPartitionSk(topic, partition),
      attempts: 5,
      giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: `Too many concurrent appends of producer ${batch.producerId} to ${topic}-${partition}` },
      decide: (item) => {
        const prior = item && item.value.producerEpoch === batch.producerEpoch ? item.value.batches : [];
        const batches = [...prior.filter((b) => b.baseSequence !== batch.baseSequence), { baseSequence: batch.baseSequence, lastSequence: batch.lastSequence, baseOffset, lastOffset }]
          .sort((a, b) => a.baseSequence - b.baseSequence)
          .slice(-BATCHES_KEPT);
        return { write: { producerEpoch: batch.producerEpoch, batches }, answer: () => undefined };
      },
    });
  }
}
