/**
 * Zstandard (codec 4): one or more zstd frames, as librdkafka (one-shot, with the content size)
 * and the Java client (zstd-jni's stream, without it) write them.
 *
 * The engine is Node's own zlib where it has zstd (Node 22.15+ and 23.8+, so Lambda's Node 24
 * runtime: libzstd compiled into Node, native on x86_64 and arm64, nothing to bundle). Older Node
 * (20 here) loads a fallback once, at import: fzstd (pure JavaScript, streaming, so the output is
 * bounded as it is produced) to decompress and @bokuweb/zstd-wasm (the reference libzstd built to
 * WebAssembly) to compress. The Lambda bundles leave both out (infra/log-functions.ts): their
 * runtime never loads them. Where neither is there (a bundle run on old Node), zstd batches are
 * UNSUPPORTED_COMPRESSION_TYPE, saying what is missing; every other codec works.
 */
import * as zlib from 'node:zlib';
import { KafkaError } from '../errors.js';
import { CodecError } from './errors.js';

/**
 * The fallback's packages, loaded at run time from node_modules: a bundle leaves them out (the
 * WebAssembly one reads its .wasm file beside its own code, which a bundle would not carry).
 */
export const ZSTD_FALLBACK_PACKAGES = ['fzstd', '@bokuweb/zstd-wasm'];

/** Kafka's compression.zstd.level default, and zstd's own. */
export const ZSTD_DEFAULT_LEVEL = 3;

interface ZstdEngine {
  name: string;
  compress(bytes: Uint8Array, level: number): Uint8Array;
  decompress(bytes: Uint8Array, maxBytes: number): Uint8Array;
}

/** The zstd functions of node:zlib, which @types/node 20 does not declare. */
interface NodeZstd {
  zstdCompressSync(bytes: Uint8Array, options: { params: Record<number, number> }): Buffer;
  zstdDecompressSync(bytes: Uint8Array, options: { maxOutputLength: number }): Buffer;
  constants: { ZSTD_c_compressionLevel: number };
}

function nodeEngine(z: NodeZstd): ZstdEngine {
  return {
    name: 'node:zlib',
    compress: (bytes, level) => z.zstdCompressSync(bytes, { params: { [z.constants.ZSTD_c_compressionLevel]: level } }),
    decompress: (bytes, maxBytes) => {
      try {
        return z.zstdDecompressSync(bytes, { maxOutputLength: maxBytes });
      } catch (e) {
        const tooLarge = (e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
        throw new CodecError(tooLarge ? `zstd: inflates past ${maxBytes} bytes` : 'zstd: does not inflate', tooLarge);
      }
    },
  };
}

async function fallbackEngine(): Promise<ZstdEngine> {
  const [fzstd, wasm] = await Promise.all([import('fzstd'), import('@bokuweb/zstd-wasm')]);
  await wasm.init();
  return {
    name: 'fzstd + @bokuweb/zstd-wasm',
    compress: (bytes, level) => wasm.compress(bytes, level),
    decompress: (bytes, maxBytes) => {
      const chunks: Uint8Array[] = [];
      let total = 0;
      const stream = new fzstd.Decompress((chunk) => {
        total += chunk.byteLength;
        if (total > maxBytes) throw new CodecError(`zstd: inflates past ${maxBytes} bytes`, true);
        chunks.push(chunk);
      });
      try {
        stream.push(bytes, true);
      } catch (e) {
        if (e instanceof CodecError) throw e;
        throw new CodecError('zstd: does not inflate');
      }
      return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
    },
  };
}

function missingEngine(reason: unknown): ZstdEngine {
  const refuse = (): never => {
    throw new KafkaError(
      'UNSUPPORTED_COMPRESSION_TYPE',
      `zstd needs Node 22.15+ (node:zlib's zstd) or the packages ${ZSTD_FALLBACK_PACKAGES.join(' and ')} (${String(reason)})`,
    );
  };
  return { name: 'none', compress: refuse, decompress: refuse };
}

const native = zlib as unknown as Partial<NodeZstd>;
const engine: ZstdEngine =
  typeof native.zstdCompressSync === 'function'
    ? nodeEngine(native as NodeZstd)
    : await fallbackEngine().catch(missingEngine);

/** Which implementation this process uses (for the docs' and the tests' sake). */
export const ZSTD_ENGINE = engine.name;

export const zstdCompress = (bytes: Uint8Array, level = ZSTD_DEFAULT_LEVEL): Uint8Array =>
  engine.compress(bytes, level);

export const zstdDecompress = (bytes: Uint8Array, maxBytes: number): Uint8Array => engine.decompress(bytes, maxBytes);
