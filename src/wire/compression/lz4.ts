/**
 * LZ4 as Kafka's clients send it (codec 3): one LZ4 frame (the lz4 frame format, magic
 * 0x184D2204), with the header checksum computed over the frame descriptor only, as KIP-57 fixed
 * it for message format v1 and later (Kafka's KafkaLZ4BlockOutputStream and librdkafka both write
 * it so). The reader takes what LZ4F writers produce: linked or independent blocks, block and
 * content checksums (verified), a content size; the dictionary id, which no Kafka client sets,
 * is refused. Writing uses 64 KiB independent blocks, as Kafka's Java client does.
 *
 * The block codec is lz4js (pure JavaScript: the same code in every bundle and on both Lambda
 * architectures); the frame around it is read here, so that the output is bounded before it is
 * allocated and every checksum is checked (lz4js's own frame reader checks neither).
 */
import { compressBlock, decompressBlock } from 'lz4js';
import { hash as xxh32 } from 'lz4js/xxh32.js';
import { CodecError } from './errors.js';

const MAGIC = 0x184d2204;
const VERSION = 0x40;
const FLAG_BLOCK_INDEPENDENCE = 0x20;
const FLAG_BLOCK_CHECKSUM = 0x10;
const FLAG_CONTENT_SIZE = 0x08;
const FLAG_CONTENT_CHECKSUM = 0x04;
const FLAG_DICT_ID = 0x01;
const UNCOMPRESSED_BIT = 0x8000_0000;
/** Block maximum sizes by the BD byte's bits 4-6. */
const BLOCK_MAX = new Map([
  [4, 64 * 1024],
  [5, 256 * 1024],
  [6, 1024 * 1024],
  [7, 4 * 1024 * 1024],
]);
const WRITE_BLOCK_ID = 4;
const WRITE_BLOCK_BYTES = 64 * 1024;

const corrupt = (message: string) => new CodecError(`lz4: ${message}`);

/**
 * What the LZ4 block src[at, end) decodes to, in bytes, read from its sequences without decoding
 * them; -1 if a match refers before the content's start (`before`: bytes decoded ahead of the
 * block). A block's length fields can claim ~255 output bytes per input byte: sizing it first,
 * in time linear in the input, keeps lz4js from spending that long on a block that is refused.
 */
function blockOutputSize(src: Uint8Array, at: number, end: number, before: number): number {
  let size = 0;
  while (at < end) {
    const token = src[at++]!;
    let literals = token >> 4;
    if (literals === 15) {
      let b: number;
      do {
        b = src[at++] ?? 0;
        literals += b;
      } while (b === 255 && at < end);
    }
    size += literals;
    at += literals;
    if (at >= end) break; // the last sequence has literals only
    const offset = src[at]! | (src[at + 1]! << 8);
    at += 2;
    if (offset === 0 || offset > before + size) return -1;
    let match = token & 15;
    if (match === 15) {
      let b: number;
      do {
        b = src[at++] ?? 0;
        match += b;
      } while (b === 255 && at < end);
    }
    size += match + 4;
  }
  return size;
}

export function lz4Decompress(bytes: Uint8Array, maxBytes: number): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 7 || view.getUint32(0, true) !== MAGIC) throw corrupt('not an LZ4 frame');
  const flags = bytes[4]!;
  if ((flags & 0xc0) !== VERSION) throw corrupt(`frame version ${flags >> 6}`);
  if ((flags & 0x02) !== 0) throw corrupt('reserved flag set');
  if ((flags & FLAG_DICT_ID) !== 0) throw corrupt('a dictionary id is not supported');
  const blockMax = BLOCK_MAX.get((bytes[5]! >> 4) & 0x07);
  if (blockMax === undefined || (bytes[5]! & 0x8f) !== 0) throw corrupt('bad block descriptor');
  let at = 6;
  let contentSize = -1;
  if ((flags & FLAG_CONTENT_SIZE) !== 0) {
    if (bytes.byteLength < at + 9) throw corrupt('truncated frame descriptor');
    const high = view.getUint32(at + 4, true);
    contentSize = high === 0 ? view.getUint32(at, true) : Number.POSITIVE_INFINITY;
    if (contentSize > maxBytes) throw new CodecError(`lz4: content size above ${maxBytes} bytes`, true);
    at += 8;
  }
  // KIP-57: the second byte of xxh32 over the descriptor (flags .. content size), seed 0.
  const headerChecksum = (xxh32(0, bytes, 4, at - 4) >>> 8) & 0xff;
  if (bytes[at] !== headerChecksum) throw corrupt('frame header checksum mismatch');
  at++;
  const blockChecksums = (flags & FLAG_BLOCK_CHECKSUM) !== 0;
  let out = new Uint8Array(Math.min(maxBytes, contentSize >= 0 ? contentSize : 4 * bytes.byteLength + blockMax));
  let written = 0;
  for (;;) {
    if (bytes.byteLength - at < 4) throw corrupt('truncated block size');
    const word = view.getUint32(at, true);
    at += 4;
    if (word === 0) break; // the end mark
    const size = word & ~UNCOMPRESSED_BIT;
    if (size > blockMax || size > bytes.byteLength - at - (blockChecksums ? 4 : 0))
      throw corrupt(`bad block size ${size}`);
    if (blockChecksums && view.getUint32(at + size, true) !== xxh32(0, bytes, at, size) >>> 0)
      throw corrupt('block checksum mismatch');
    // Room for a whole block; output past maxBytes is an error, so never more than that.
    if (out.byteLength - written < blockMax && out.byteLength < maxBytes) {
      const grown = new Uint8Array(Math.min(maxBytes, Math.max(2 * out.byteLength, written + blockMax)));
      grown.set(out.subarray(0, written));
      out = grown;
    }
    let end: number;
    if ((word & UNCOMPRESSED_BIT) !== 0) {
      end = written + size;
      if (end <= out.byteLength) out.set(bytes.subarray(at, at + size), written);
    } else {
      const decoded = blockOutputSize(bytes, at, at + size, written);
      if (decoded < 0) throw corrupt('a match refers before the content');
      if (decoded > blockMax) throw corrupt('a block inflates past its maximum size');
      if (written + decoded > out.byteLength)
        throw new CodecError(`lz4: the content inflates past ${maxBytes} bytes`, true);
      // lz4js writes into `out` from `written` and may refer back to earlier blocks (linked blocks).
      end = decompressBlock(bytes, out, at, size, written);
    }
    if (!Number.isInteger(end) || end - written > blockMax) throw corrupt('a block inflates past its maximum size');
    if (end > out.byteLength) throw new CodecError(`lz4: the content inflates past ${maxBytes} bytes`, true);
    written = end;
    at += size + (blockChecksums ? 4 : 0);
  }
  if ((flags & FLAG_CONTENT_CHECKSUM) !== 0) {
    if (bytes.byteLength - at < 4) throw corrupt('truncated content checksum');
    if (view.getUint32(at, true) !== xxh32(0, out, 0, written) >>> 0) throw corrupt('content checksum mismatch');
    at += 4;
  }
  if (at !== bytes.byteLength) throw corrupt(`${bytes.byteLength - at} bytes after the frame`);
  if (contentSize >= 0 && written !== contentSize)
    throw corrupt(`content is ${written} bytes, the frame says ${contentSize}`);
  return out.subarray(0, written);
}

export function lz4Compress(bytes: Uint8Array): Uint8Array {
  const blocks = Math.ceil(bytes.byteLength / WRITE_BLOCK_BYTES);
  // Header, per block its size word and at most its bytes (stored raw when it does not shrink), end mark.
  const out = new Uint8Array(7 + blocks * 4 + bytes.byteLength + 4);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  out[4] = VERSION | FLAG_BLOCK_INDEPENDENCE;
  out[5] = WRITE_BLOCK_ID << 4;
  out[6] = (xxh32(0, out, 4, 2) >>> 8) & 0xff;
  let at = 7;
  const scratch = new Uint8Array(WRITE_BLOCK_BYTES + (WRITE_BLOCK_BYTES >> 8) + 16);
  const hashTable = new Uint32Array(1 << 16);
  for (let from = 0; from < bytes.byteLength; from += WRITE_BLOCK_BYTES) {
    const block = bytes.subarray(from, from + WRITE_BLOCK_BYTES);
    hashTable.fill(0); // independent blocks: no match reaches into an earlier one
    const size = compressBlock(block, scratch, 0, block.byteLength, hashTable);
    if (size > 0 && size < block.byteLength) {
      view.setUint32(at, size, true);
      out.set(scratch.subarray(0, size), at + 4);
      at += 4 + size;
    } else {
      view.setUint32(at, (block.byteLength | UNCOMPRESSED_BIT) >>> 0, true);
      out.set(block, at + 4);
      at += 4 + block.byteLength;
    }
  }
  view.setUint32(at, 0, true);
  return out.subarray(0, at + 4);
}
