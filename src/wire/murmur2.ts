/**
 * Kafka's key hash and default key partitioner (`org.apache.kafka.common.utils.Utils.murmur2` and
 * `BuiltInPartitioner.partitionForKey`): the same key lands on the same partition as with any Java
 * Kafka producer, so data produced here and through a Kafka client interleaves per key.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/**
 * MurmurHash2 (32-bit) of `data` with Kafka's seed, returned as a signed 32-bit integer exactly as
 * Java's `int` result (so it may be negative).
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const tail = length & ~3;
  for (let i = 0; i < tail; i += 4) {
    let k = data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // Remaining 1..3 bytes (Java's fall-through switch on length % 4).
  const rest = length & 3;
  if (rest !== 0) {
    if (rest === 3) h ^= data[tail + 2]! << 16;
    if (rest >= 2) h ^= data[tail + 1]! << 8;
    h ^= data[tail]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** Kafka's `Utils.toPositive`: clears the sign bit (not `Math.abs`, which breaks on -2^31). */
export const toPositive = (n: number): number => n & 0x7fffffff;

/** The partition Kafka's default partitioner picks for a non-null key: toPositive(murmur2(key)) % n. */
export function partitionForKey(key: Uint8Array, numPartitions: number): number {
  if (!Number.isInteger(numPartitions) || numPartitions < 1) {
    throw new RangeError(`numPartitions must be a positive integer, got ${numPartitions}`);
  }
  return toPositive(murmur2(key)) % numPartitions;
}
