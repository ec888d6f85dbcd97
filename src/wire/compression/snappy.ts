/**
 * Snappy as Kafka's clients send it (codec 2): librdkafka writes one raw snappy block; the Java
 * client writes snappy-java's "xerial" framing, a 16-byte header (0x82 "SNAPPY" 0x00, version,
 * compatible version) then blocks of [int32 big-endian length][raw snappy block]. A reader takes
 * both, telling them apart by the header, as Kafka's and librdkafka's readers do. Writing uses the
 * xerial framing, as Kafka's own producer: every Kafka client reads it.
 *
 * The snappy codec itself is snappyjs (pure JavaScript, so the same code runs in every bundle and
 * on both Lambda architectures); a raw block states its length first, which is checked against the
 * bound before anything is allocated.
 */
import { compress as rawCompress, uncompress as rawUncompress } from 'snappyjs';
import { CodecError } from './errors.js';

const XERIAL_MAGIC = [0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00];
const XERIAL_HEADER_BYTES = 16;
/** snappy-java's default block size: what the Java client's SnappyOutputStream cuts the records into. */
const XERIAL_BLOCK_BYTES = 32 * 1024;

export function isXerialFramed(bytes: Uint8Array): boolean {
  if (bytes.byteLength < XERIAL_HEADER_BYTES) return false;
  for (let i = 0; i < XERIAL_MAGIC.length; i++) if (bytes[i] !== XERIAL_MAGIC[i]) return false;
  return true;
}

function rawBlock(bytes: Uint8Array, maxBytes: number): Uint8Array {
  try {
    return rawUncompress(bytes, maxBytes);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    throw new CodecError(`snappy: ${message}`, message.includes('too big'));
  }
}

export function snappyDecompress(bytes: Uint8Array, maxBytes: number): Uint8Array {
  if (!isXerialFramed(bytes)) return rawBlock(bytes, maxBytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const blocks: Uint8Array[] = [];
  let total = 0;
  for (let at = XERIAL_HEADER_BYTES; at < bytes.byteLength; ) {
    if (bytes.byteLength - at < 4) throw new CodecError('snappy: truncated xerial block length');
    const length = view.getInt32(at);
    at += 4;
    if (length < 0 || length > bytes.byteLength - at) throw new CodecError(`snappy: bad xerial block length ${length}`);
    const block = rawBlock(bytes.subarray(at, at + length), maxBytes - total);
    total += block.byteLength;
    blocks.push(block);
    at += length;
  }
  return blocks.length === 1 ? blocks[0]! : Buffer.concat(blocks, total);
}

export function snappyCompress(bytes: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [Uint8Array.from([...XERIAL_MAGIC, 0, 0, 0, 1, 0, 0, 0, 1])];
  for (let at = 0; at < bytes.byteLength; at += XERIAL_BLOCK_BYTES) {
    const block = rawCompress(bytes.subarray(at, at + XERIAL_BLOCK_BYTES));
    const length = Buffer.alloc(4);
    length.writeInt32BE(block.byteLength);
    parts.push(length, block);
  }
  return Buffer.concat(parts);
}
