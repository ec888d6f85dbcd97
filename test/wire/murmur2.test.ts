import { describe, expect, it } from 'vitest';
import { murmur2, partitionForKey, toPositive } from '../../src/wire/murmur2.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

describe('murmur2', () => {
  it("matches Java Kafka's Utils.murmur2 (vectors from Kafka's UtilsTest.testMurmur2)", () => {
    expect(murmur2(bytes('21'))).toBe(-973932308);
    expect(murmur2(bytes('foobar'))).toBe(-790332482);
    expect(murmur2(bytes('a-little-bit-long-string'))).toBe(-985981536);
    expect(murmur2(bytes('a-little-bit-longer-string'))).toBe(-1486304829);
    expect(murmur2(bytes('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'))).toBe(-58897971);
    expect(murmur2(Uint8Array.of(0x61, 0x62, 0x63))).toBe(479470107);
  });

  it('matches further published Kafka murmur2 values (every tail length 1..4)', () => {
    // Values checked against Kafka's Utils.murmur2 by Akka's Murmur2Spec.
    expect(murmur2(bytes('1'))).toBe(-1993445489);
    expect(murmur2(bytes('12'))).toBe(126087238);
    expect(murmur2(bytes('123'))).toBe(-267702483);
    expect(murmur2(bytes('1234'))).toBe(-1614185708);
    expect(murmur2(bytes('12345'))).toBe(-1188365604);
  });

  it('returns a signed 32-bit integer', () => {
    for (const s of ['', 'a', 'key', 'a-little-bit-long-string']) {
      const h = murmur2(bytes(s));
      expect(h | 0).toBe(h);
    }
  });
});

describe('partitionForKey', () => {
  it("matches Kafka's default partitioner for 1000 partitions (Java-compatibility vectors used by kafka-python)", () => {
    expect(partitionForKey(new Uint8Array(0), 1000)).toBe(681);
    expect(partitionForKey(bytes('a'), 1000)).toBe(524);
    expect(partitionForKey(bytes('ab'), 1000)).toBe(434);
    expect(partitionForKey(bytes('abc'), 1000)).toBe(107);
    expect(partitionForKey(bytes('123456789'), 1000)).toBe(566);
    expect(partitionForKey(Uint8Array.of(0x00, 0x20), 1000)).toBe(742);
  });

  it('is toPositive(murmur2(key)) % numPartitions', () => {
    // murmur2("21") = -973932308; toPositive clears the sign bit: 0xc5f3b6ec & 0x7fffffff = 1173551340.
    expect(toPositive(-973932308)).toBe(1173551340);
    expect(partitionForKey(bytes('21'), 7)).toBe(1173551340 % 7);
    expect(partitionForKey(bytes('21'), 1)).toBe(0);
    expect(toPositive(-2147483648)).toBe(0);
    expect(toPositive(-1)).toBe(0x7fffffff);
  });

  it('rejects a non-positive partition count', () => {
    expect(() => partitionForKey(bytes('k'), 0)).toThrow(RangeError);
    expect(() => partitionForKey(bytes('k'), 1.5)).toThrow(RangeError);
  });
});
