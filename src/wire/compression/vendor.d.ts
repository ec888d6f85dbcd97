/** The two pure-JavaScript codec packages ship no types: the parts used here. */
declare module 'snappyjs' {
  /** A raw snappy block; throws when its stated length is above maxLength or the stream is invalid. */
  export function uncompress<T extends Uint8Array>(compressed: T, maxLength?: number): T;
  export function compress<T extends Uint8Array>(uncompressed: T): T;
}

declare module 'lz4js' {
  /** Decodes the LZ4 block src[sIndex, sIndex + sLength) into dst from dIndex; returns the new dIndex. */
  export function decompressBlock(
    src: Uint8Array,
    dst: Uint8Array,
    sIndex: number,
    sLength: number,
    dIndex: number,
  ): number;
  /** Encodes src[sIndex, sIndex + sLength) as one LZ4 block into dst; 0 when nothing was worth encoding. */
  export function compressBlock(
    src: Uint8Array,
    dst: Uint8Array,
    sIndex: number,
    sLength: number,
    hashTable: Uint32Array,
  ): number;
}

declare module 'lz4js/xxh32.js' {
  export function hash(seed: number, src: Uint8Array, index: number, length: number): number;
}
