/**
 * Memory for encoded batches, kept for the next request once a request has its answer (as Kafka's
 * producer keeps batch.size buffers in its BufferPool's free list). A batch of a megabyte written
 * into new memory costs a page fault per 4 KiB, and on a virtual machine (a Lambda, the project's
 * build machine) the copy of the records into the batch was then ten to twenty times slower than
 * into memory already touched: 14% of the producer's CPU time in `perf produce`.
 *
 * Buffers come in powers of two, so a batch takes at most twice its size; small batches (which
 * malloc serves from memory it already has) are not kept.
 */
export class BatchBuffers {
  /** Free buffers by size class (log2 of their size). */
  private readonly free = new Map<number, ArrayBuffer[]>();
  private freeBytes = 0;

  constructor(
    /** Free memory kept at most; buffers given back beyond it are left to the garbage collector. */
    readonly maxFreeBytes: number,
  ) {}

  /** `bytes` of memory, used before or new; the caller gives it back with release(). */
  take(bytes: number): Uint8Array {
    if (bytes < MIN_KEPT_BYTES) return new Uint8Array(bytes);
    const sizeClass = Math.ceil(Math.log2(bytes));
    const b = this.free.get(sizeClass)?.pop();
    if (b === undefined) return new Uint8Array(new ArrayBuffer(2 ** sizeClass), 0, bytes);
    this.freeBytes -= b.byteLength;
    return new Uint8Array(b, 0, bytes);
  }

  /** Gives back what take() handed out; nothing may read or write it afterwards. */
  release(bytes: Uint8Array): void {
    const b = bytes.buffer as ArrayBuffer;
    if (b.byteLength < MIN_KEPT_BYTES || this.freeBytes + b.byteLength > this.maxFreeBytes) return;
    const sizeClass = Math.log2(b.byteLength);
    let list = this.free.get(sizeClass);
    if (!list) this.free.set(sizeClass, (list = []));
    list.push(b);
    this.freeBytes += b.byteLength;
  }

  /** Bytes kept for reuse now. */
  get keptBytes(): number {
    return this.freeBytes;
  }
}

/** Below this, memory comes from malloc's own free lists, already touched: nothing to gain. */
const MIN_KEPT_BYTES = 64 * 1024;
