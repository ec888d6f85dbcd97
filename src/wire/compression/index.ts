/**
 * Kafka's record batch compression codecs (attributes bits 0-2), as Kafka's clients write them:
 * the one place that maps a codec to its implementation. Each decompressor is bounded: content
 * past `maxBytes` is refused (a CodecError with tooLarge) before or while it is produced, never
 * after a whole bomb was inflated.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { CodecError } from './errors.js';
import { lz4Compress, lz4Decompress } from './lz4.js';
import { snappyCompress, snappyDecompress } from './snappy.js';
import { zstdCompress, zstdDecompress } from './zstd.js';

export { CodecError } from './errors.js';
export { ZSTD_ENGINE } from './zstd.js';

/** Kafka's compression.type values of a producer, in codec id order (the id is the index). */
export const COMPRESSION_TYPES = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type CompressionType = (typeof COMPRESSION_TYPES)[number];

/** Kafka's codec ids (attributes bits 0-2). */
export const CODEC = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;

/**
 * The codecs that take a level, with Kafka's ranges and defaults (KIP-390: compression.gzip.level,
 * compression.zstd.level). lz4's level (Kafka's compression.lz4.level, its high-compression mode)
 * is not offered: the lz4 compressor here has only LZ4's fast mode, Kafka's level 1.
 */
export const COMPRESSION_LEVELS: Readonly<
  Partial<Record<CompressionType, { min: number; max: number; default: number }>>
> = {
  gzip: { min: 1, max: 9, default: 6 },
  zstd: { min: -131072, max: 22, default: 3 },
};

export const compressionTypeOf = (codecId: number): CompressionType | undefined => COMPRESSION_TYPES[codecId];

/** `bytes` compressed with `type` (not 'none'), at `level` where the codec takes one. */
export function compress(type: Exclude<CompressionType, 'none'>, bytes: Uint8Array, level?: number): Uint8Array {
  switch (type) {
    case 'gzip':
      return gzipSync(bytes, { level: level ?? COMPRESSION_LEVELS.gzip!.default });
    case 'snappy':
      return snappyCompress(bytes);
    case 'lz4':
      return lz4Compress(bytes);
    case 'zstd':
      return zstdCompress(bytes, level ?? COMPRESSION_LEVELS.zstd!.default);
  }
}

/** `bytes` inflated by codec id (not none); CodecError if they do not inflate or inflate past `maxBytes`. */
export function decompress(codecId: number, bytes: Uint8Array, maxBytes: number): Uint8Array {
  switch (codecId) {
    case CODEC.gzip:
      try {
        return gunzipSync(bytes, { maxOutputLength: maxBytes });
      } catch (e) {
        const tooLarge = (e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
        throw new CodecError(tooLarge ? `gzip: inflates past ${maxBytes} bytes` : 'gzip: does not inflate', tooLarge);
      }
    case CODEC.snappy:
      return snappyDecompress(bytes, maxBytes);
    case CODEC.lz4:
      return lz4Decompress(bytes, maxBytes);
    case CODEC.zstd:
      return zstdDecompress(bytes, maxBytes);
    default:
      throw new CodecError(`unknown compression codec ${codecId}`);
  }
}
