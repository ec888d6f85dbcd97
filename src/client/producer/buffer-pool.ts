import { KafkaClientError, KafkaTimeoutError } from '../errors.js';

/**
 * buffer.memory: bytes of records accepted by send() but not yet acknowledged. When it is spent,
 * send() waits (first come, first served, so that records keep their order) up to max.block.ms.
 */
export class BufferPool {
  private available: number;
  private readonly waiters: {
    bytes: number;
    resolve: () => void;
    reject: (e: Error) => void;
    timer: NodeJS.Timeout;
  }[] = [];

  constructor(readonly totalBytes: number) {
    this.available = totalBytes;
  }

  get availableBytes(): number {
    return this.available;
  }

  /** Takes `bytes` at once if free and nobody is waiting ahead. */
  tryReserve(bytes: number): boolean {
    if (this.waiters.length > 0 || this.available < Math.min(bytes, this.totalBytes)) return false;
    this.available -= bytes;
    return true;
  }

  reserve(bytes: number, maxBlockMs: number): Promise<void> {
    if (bytes > this.totalBytes) {
      return Promise.reject(
        new KafkaClientError(
          'BUFFER_EXHAUSTED',
          `A record of ${bytes} bytes is larger than buffer.memory (${this.totalBytes})`,
        ),
      );
    }
    if (this.tryReserve(bytes)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        bytes,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          reject(
            new KafkaTimeoutError(
              `Failed to allocate ${bytes} bytes within max.block.ms (${maxBlockMs} ms): buffer.memory is full`,
            ),
          );
          this.grant();
        }, maxBlockMs),
      };
      this.waiters.push(waiter);
    });
  }

  release(bytes: number): void {
    this.available = Math.min(this.totalBytes, this.available + bytes);
    this.grant();
  }

  /** Fails every waiter (on close). */
  abort(e: Error): void {
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(e);
    }
  }

  private grant(): void {
    while (this.waiters.length > 0 && this.available >= this.waiters[0]!.bytes) {
      const w = this.waiters.shift()!;
      clearTimeout(w.timer);
      this.available -= w.bytes;
      w.resolve();
    }
  }
}
