/**
 * The codecs of src/wire/compression: each round-trips, each is bounded (content past the bound is
 * refused as too large, not inflated), and each reads the framings Kafka's clients write. Real
 * clients' batches are in test/wire/compression/fixtures.test.ts.
 */
import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { hash as xxh32 } from 'lz4js/xxh32.js';
import { compress as snappyRaw } from 'snappyjs';
import { CodecError, compress, COMPRESSION_TYPES, CODEC, decompress } from '../../../src/wire/compression/index.js';
import { isXerialFramed } from '../../../src/wire/compression/snappy.js';

const CODECS = ['gzip', 'snappy', 'lz4', 'zstd'] as const;
const text = Buffer.from(Array.from({ length: 20_000 }, (_, i) => `record ${i % 300} of a batch;`).join(''));
const random = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 2654435761) >>> 24));

describe('codecs', () => {
  it('lists Kafka codec ids in order', () => {
    expect(COMPRESSION_TYPES.map((t) => CODEC[t])).toEqual([0, 1, 2, 3, 4]);
  });

  it.each(CODECS)('%s round-trips text, incompressible bytes and nothing', (codec) => {
    for (const input of [text, random, Buffer.alloc(0)]) {
      const packed = compress(codec, input);
      if (input === text) expect(packed.byteLength).toBeLessThan(input.byteLength / 4);
      expect(Buffer.from(decompress(CODEC[codec], packed, Math.max(1, input.byteLength))).equals(input)).toBe(true);
    }
  });

  it.each(CODECS)('%s refuses content past the bound as too large (a bomb), and garbage as not inflating', (codec) => {
    const bomb = compress(codec, Buffer.alloc(4 * 1024 * 1024));
    expect(bomb.byteLength).toBeLessThan(300 * 1024);
    const err = (() => {
      try {
        decompress(CODEC[codec], bomb, 1024 * 1024);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(CodecError);
    expect((err as CodecError).tooLarge).toBe(true);
    expect(() => decompress(CODEC[codec], Buffer.from('not compressed at all, surely'), 1 << 20)).toThrow(CodecError);
  });

  it('gzip and zstd take a level; a higher one is no larger', () => {
    expect(compress('gzip', text, 9).byteLength).toBeLessThanOrEqual(compress('gzip', text, 1).byteLength);
    expect(compress('zstd', text, 19).byteLength).toBeLessThanOrEqual(compress('zstd', text, 1).byteLength);
  });
});

describe('snappy framings', () => {
  it('writes the xerial framing (as the Java client) in 32 KiB blocks', () => {
    const packed = compress('snappy', text);
    expect(isXerialFramed(packed)).toBe(true);
    expect(Buffer.from(packed.subarray(0, 16)).toString('hex')).toBe('82534e41505059000000000100000001');
    const blocks = Math.ceil(text.byteLength / 32768);
    let at = 16;
    for (let i = 0; i < blocks; i++) at += 4 + Buffer.from(packed).readInt32BE(at);
    expect(at).toBe(packed.byteLength);
  });

  it('reads a raw snappy block (as librdkafka writes it), bounded by its stated length', () => {
    const raw = snappyRaw(Buffer.from(text));
    expect(isXerialFramed(raw)).toBe(false);
    expect(Buffer.from(decompress(CODEC.snappy, raw, text.byteLength)).equals(text)).toBe(true);
    expect(() => decompress(CODEC.snappy, raw, text.byteLength - 1)).toThrow(
      expect.objectContaining({ tooLarge: true }),
    );
  });

  it('refuses a xerial block whose length runs past the bytes', () => {
    const packed = Buffer.from(compress('snappy', text));
    packed.writeInt32BE(packed.byteLength, 16);
    expect(() => decompress(CODEC.snappy, packed, 1 << 20)).toThrow(/xerial block length/);
  });
});

describe('lz4 frames', () => {
  const frame = Buffer.from(compress('lz4', text));

  it('writes a v1 frame of 64 KiB independent blocks with the KIP-57 header checksum', () => {
    expect(frame.readUInt32LE(0)).toBe(0x184d2204);
    expect(frame[4]).toBe(0x60); // version 01, block independence
    expect(frame[5]).toBe(0x40); // 64 KiB blocks
    expect(frame[6]).toBe(0x82); // xxh32(0x60 0x40) >> 8 & 0xff, the descriptor only (not the magic)
  });

  it('refuses a frame with the pre-KIP-57 checksum (over the magic too), or a flipped block bit', () => {
    const wrong = Buffer.from(frame);
    wrong[6] = wrong[6]! ^ 0x5a;
    expect(() => decompress(CODEC.lz4, wrong, 1 << 20)).toThrow(/header checksum/);
    const dictionary = Buffer.from(frame);
    dictionary[4] = 0x61;
    expect(() => decompress(CODEC.lz4, dictionary, 1 << 20)).toThrow(CodecError);
  });

  it('refuses bytes after the end mark, and a block above the maximum size the frame declares', () => {
    expect(() => decompress(CODEC.lz4, Buffer.concat([frame, Buffer.from([0])]), 1 << 20)).toThrow(/after the frame/);
    const big = Buffer.from(frame);
    big.writeUInt32LE(70_000, 7);
    expect(() => decompress(CODEC.lz4, big, 1 << 20)).toThrow(/block size/);
  });
});

describe('lz4 blocks are sized before they are decoded', () => {
  /** A frame of one 4 MiB-max block holding `block`. */
  const frameOf = (block: Buffer) => {
    const out = Buffer.alloc(11 + block.byteLength + 4);
    out.writeUInt32LE(0x184d2204, 0);
    out[4] = 0x60;
    out[5] = 0x70;
    out[6] = (xxh32(0, out, 4, 2) >>> 8) & 0xff;
    out.writeUInt32LE(block.byteLength, 7);
    block.copy(out, 11);
    return out;
  };

  it('refuses, at once, a block whose length bytes claim more than its maximum (~255 bytes per byte)', () => {
    const block = Buffer.alloc(1024 * 1024, 0xff);
    block.set([0x1f, 0x41, 1, 0]); // one literal, then a match whose length runs on through every 0xff
    block[block.byteLength - 1] = 0;
    const started = performance.now();
    expect(() => decompress(CODEC.lz4, frameOf(block), 64 << 20)).toThrow(/inflates past its maximum/);
    // Sizing reads the block once; decoding it would write ~255 MiB first (seconds).
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('refuses a match that refers before the content', () => {
    expect(() => decompress(CODEC.lz4, frameOf(Buffer.from([0x10, 0x41, 9, 0, 0x10, 0x42])), 1 << 20)).toThrow(
      /refers before the content/,
    );
  });
});

describe('gzip stays what zlib reads', () => {
  it('refuses a raw deflate stream (no gzip header)', () => {
    expect(() => decompress(CODEC.gzip, deflateRawSync(text), 1 << 20)).toThrow(CodecError);
  });
});
