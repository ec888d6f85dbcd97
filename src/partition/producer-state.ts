import { KafkaError } from '../wire/errors.js';
import type { ProducerBatch, ProducerEntry } from './partition-state.js';

/**
 * Idempotent producer state per partition, as Kafka's ProducerStateManager keeps it.
 *
 * The partition state item keeps each producer's LAST batch, written in the same conditional
 * write as the append, so the sequence check and the append are atomic: a retry of the last batch
 * (the usual case) is recognised without any other read. An older duplicate (up to five in flight)
 * is answered with its original offsets from the offset index, whose entries carry the producer
 * and sequence range of each commit (OffsetIndex.findProducerBatch): no write beyond the commit's
 * own (versions before wrote a producer item, pk `pid#{id}` sk `part#{topic}#{p}`, with the last
 * five batches after each append: one more write per partition per request).
 */

/** Producers idle longer than this leave the partition state (Kafka's producer.id.expiration.ms). */
export const PRODUCER_ID_EXPIRATION_MS = 86_400_000;
/** Bound on producers tracked in one partition state item (keeps the item small). */
export const MAX_PRODUCERS_PER_PARTITION = 500;

/**
 * OUT_OF_ORDER_SEQUENCE_NUMBER for a batch ahead of the one the partition expects (a forward gap,
 * or a later batch of an epoch whose first has not landed): the batches before it may be in flight
 * in other requests, which on AWS other Lambdas serve, so the commit may decide it again once they
 * have landed (partition-log.ts SEQUENCE_GAP_WAITS_MS). An overlapping batch is refused as before.
 */
export class SequenceGap extends KafkaError {
  constructor(message: string) {
    super('OUT_OF_ORDER_SEQUENCE_NUMBER', message);
  }
}

export type SequenceCheck =
  | { kind: 'append' }
  | { kind: 'duplicate'; baseOffset: number; lastOffset: number }
  | { kind: 'older' };

/**
 * What the partition state knows of a producer: its epoch and last sequence always; the last
 * batch's first sequence and offsets only for the most recent producers (see packProducers).
 */
export type ProducerSequence = Pick<ProducerEntry, 'producerId' | 'producerEpoch' | 'lastSequence' | 'updatedAt'> &
  Partial<Pick<ProducerEntry, 'baseSequence' | 'baseOffset' | 'lastOffset'>>;

/** Decides what an incoming batch is, given the producer's last batch in this partition. */
export function checkSequence(last: ProducerSequence | undefined, batch: ProducerBatch): SequenceCheck {
  const where = `producer ${batch.producerId} epoch ${batch.producerEpoch}`;
  if (last && batch.producerEpoch < last.producerEpoch) {
    throw new KafkaError(
      'INVALID_PRODUCER_EPOCH',
      `${where} is fenced: epoch ${last.producerEpoch} has written to this partition`,
    );
  }
  // A producer the partition has no entry for (never seen, or expired after
  // producer.id.expiration.ms) must start at 0, unlike Kafka's broker, which takes an unknown
  // producer at any sequence: one connection delivers a producer's batches in order there, while
  // here its requests may arrive out of order, and a later batch taken first would turn the
  // earlier one into a duplicate. The client bumps its epoch and starts again at 0 (KIP-360).
  if (!last || batch.producerEpoch > last.producerEpoch) {
    if (batch.baseSequence !== 0) {
      const message = `${where}: the first batch of an epoch must have sequence 0, got ${batch.baseSequence}`;
      throw batch.baseSequence > 0 ? new SequenceGap(message) : new KafkaError('OUT_OF_ORDER_SEQUENCE_NUMBER', message);
    }
    return { kind: 'append' };
  }
  if (
    batch.baseSequence === last.baseSequence &&
    batch.lastSequence === last.lastSequence &&
    last.baseOffset !== undefined &&
    last.lastOffset !== undefined
  ) {
    return { kind: 'duplicate', baseOffset: last.baseOffset, lastOffset: last.lastOffset };
  }
  if (batch.baseSequence === last.lastSequence + 1) return { kind: 'append' };
  // A retry of the last batch of a producer kept without offsets lands here too: the index answers it.
  if (batch.lastSequence <= last.lastSequence) return { kind: 'older' };
  const expected = `${where}: expected sequence ${last.lastSequence + 1}, got ${batch.baseSequence}`;
  if (batch.baseSequence > last.lastSequence + 1) throw new SequenceGap(`${expected} (a batch is missing)`);
  throw new KafkaError('OUT_OF_ORDER_SEQUENCE_NUMBER', `${expected} (it overlaps the last batch)`);
}

/**
 * The partition state's producer table is rewritten whole on every commit, and DynamoDB bills a
 * write per KB of the item: as JSON objects a producer cost ~136 bytes (100 producers: 15 WRU per
 * commit). Packed, the RECENT_FULL most recent producers keep their last batch whole (a retry
 * of it, the usual duplicate, is answered with its offsets at once) in ~30 bytes, and the others
 * keep what the sequence check needs (epoch, last sequence, age) in ~15; a retry of their last
 * batch is answered from the offset index (or DUPLICATE_SEQUENCE_NUMBER if it is behind), never
 * appended twice.
 *
 *   table  := base36(newest updatedAt in s) "|" entry (";" entry)*
 *   entry  := pid "." epoch "." lastSeq "." age                                  (short)
 *           | pid "." epoch "." lastSeq "." age "." seqSpan "." lastOffset "." offsetSpan   (full)
 * numbers base36; age = seconds before the newest; spans = last - base.
 */
export const RECENT_FULL = 8;

export type ProducerTable = string;

const b36 = (n: number) => n.toString(36);
const n36 = (s: string) => parseInt(s, 36);

export function unpackProducers(table: ProducerTable | undefined): ProducerSequence[] {
  if (!table) return [];
  const bar = table.indexOf('|');
  const newest = n36(table.slice(0, bar)) * 1000;
  const out: ProducerSequence[] = [];
  for (const e of table.slice(bar + 1).split(';')) {
    if (e === '') continue;
    const f = e.split('.').map(n36);
    const entry: ProducerSequence = {
      producerId: f[0]!,
      producerEpoch: f[1]!,
      lastSequence: f[2]!,
      updatedAt: newest - f[3]! * 1000,
    };
    if (f.length === 7)
      Object.assign(entry, { baseSequence: f[2]! - f[4]!, lastOffset: f[5]!, baseOffset: f[5]! - f[6]! });
    out.push(entry);
  }
  return out;
}

/** Packs entries (most recent first), whole for the first RECENT_FULL that have their batch. */
export function packProducers(entries: ProducerSequence[]): ProducerTable {
  const newest = Math.floor(Math.max(0, ...entries.map((e) => e.updatedAt)) / 1000);
  const parts = entries.map((e, i) => {
    const short = `${b36(e.producerId)}.${b36(e.producerEpoch)}.${b36(e.lastSequence)}.${b36(Math.max(0, newest - Math.floor(e.updatedAt / 1000)))}`;
    if (i >= RECENT_FULL || e.baseSequence === undefined || e.baseOffset === undefined || e.lastOffset === undefined)
      return short;
    return `${short}.${b36(e.lastSequence - e.baseSequence)}.${b36(e.lastOffset)}.${b36(e.lastOffset - e.baseOffset)}`;
  });
  return `${b36(newest)}|${parts.join(';')}`;
}

/** One producer's entry in a partition state: the packed table, or the JSON map states written before it. */
export function producerIn(
  state: { pids?: ProducerTable; producers?: Record<string, ProducerEntry> },
  producerId: number,
): ProducerSequence | undefined {
  if (state.pids !== undefined) return unpackProducers(state.pids).find((e) => e.producerId === producerId);
  return state.producers?.[String(producerId)];
}

/**
 * How many producers the partition state keeps from feature level 5 (`partition-state` version 2):
 * the state item is rewritten on every commit and DynamoDB bills a write unit per KB, so a full
 * table (500 producers, ~7.5 KB) made every commit cost 8 units. The others are kept as items of
 * their own (producer-items.ts), written when they leave this cache, which is Kafka's producer
 * state split between memory and its snapshot: a commit then costs at most 3 units.
 */
export const PRODUCER_CACHE_SIZE = 64;
/**
 * At most this many producers leave the cache in one commit: a table of 500 from before the level
 * shrinks over a few dozen commits instead of one commit writing hundreds of producer items.
 */
export const MAX_EVICTIONS_PER_COMMIT = 8;

/** Whether `a` is a later state of the same producer than `b` (epoch, then sequence, then time). */
export function isLaterEntry(a: ProducerSequence, b: ProducerSequence): boolean {
  if (a.producerEpoch !== b.producerEpoch) return a.producerEpoch > b.producerEpoch;
  if (a.lastSequence !== b.lastSequence) return a.lastSequence > b.lastSequence;
  return a.updatedAt > b.updatedAt;
}

/**
 * The partition state's producer table with `entry` as its most recent producer, expired producers
 * dropped. `cache` undefined: up to MAX_PRODUCERS_PER_PARTITION, the oldest dropped (what
 * `partition-state` version 1 holds). `cache` set: up to that many, and `evicted` holds the
 * producers that leave it, which the caller keeps elsewhere before writing the table.
 */
export function withProducerEntry(
  state: { pids?: ProducerTable; producers?: Record<string, ProducerEntry> },
  entry: ProducerSequence,
  now: number,
  cache?: number,
): { table: ProducerTable; evicted: ProducerSequence[] } {
  const before = state.pids !== undefined ? unpackProducers(state.pids) : Object.values(state.producers ?? {});
  const others = before.filter(
    (e) => e.producerId !== entry.producerId && now - e.updatedAt < PRODUCER_ID_EXPIRATION_MS,
  );
  others.sort((a, b) => b.updatedAt - a.updatedAt);
  const keep =
    cache === undefined
      ? MAX_PRODUCERS_PER_PARTITION - 1
      : Math.max(cache - 1, others.length - MAX_EVICTIONS_PER_COMMIT);
  return {
    table: packProducers([entry, ...others.slice(0, keep)]),
    evicted: cache === undefined ? [] : others.slice(keep),
  };
}
