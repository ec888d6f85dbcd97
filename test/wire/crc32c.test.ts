import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32c as inUse, crc32cImplementation, crc32cPortable } from '../../src/wire/crc32c.js';

/** Bit-at-a-time CRC-32C straight from the definition: the reference the table version must match. */
function crc32cReference(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of data) {
    crc ^= b;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

const ascii = (s: string): Uint8Array => new TextEncoder().encode(s);

it('uses the native CRC-32C where its prebuilt binary installs (this platform has one)', () => {
  expect(crc32cImplementation).toBe('native');
});

describe.each([
  ['crc32c (native)', inUse],
  ['crc32c (portable)', crc32cPortable],
])('%s', (_name, crc32c) => {
  it('matches the published check value and RFC 3720 (B.4) vectors', () => {
    expect(crc32c(new Uint8Array(0))).toBe(0);
    expect(crc32c(ascii('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e);
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i))).toBe(0x113fdb5c);
  });

  it('returns an unsigned 32-bit number', () => {
    const c = crc32c(ascii('123456789'));
    expect(c).toBeGreaterThan(0x7fffffff);
    expect(Number.isInteger(c)).toBe(true);
  });

  it('matches the bitwise reference for every length around the 8-byte stride and any alignment', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.nat({ max: 7 }), (data, skew) => {
        // An odd byteOffset exercises views that do not start at the beginning of their buffer.
        const backing = new Uint8Array(data.length + skew);
        backing.set(data, skew);
        const view = backing.subarray(skew);
        expect(crc32c(view)).toBe(crc32cReference(data));
      }),
      { numRuns: 500 },
    );
  });

  it('chains: crc32c(b, crc32c(a)) === crc32c(a ++ b)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), fc.uint8Array({ maxLength: 100 }), (a, b) => {
        const ab = new Uint8Array(a.length + b.length);
        ab.set(a);
        ab.set(b, a.length);
        expect(crc32c(b, crc32c(a))).toBe(crc32c(ab));
      }),
    );
  });
});
