/**
 * One budget of request bytes shared by every connection of a server (Kafka's MemoryPool behind
 * queued.max.request.bytes): a connection takes a request's bytes before it reads the request and
 * gives them back once the request is answered; when the pool has no room, the connection stops
 * reading (its bytes wait in the client's socket and the kernel's buffers, not in this process)
 * until another request gives memory back. So the requests of all connections together hold at most
 * the capacity, however many connections send large frames or bodies at once.
 */
export class MemoryPool {
  #used = 0;
  readonly #waiters = new Set<() => boolean>();
  #waking = false;

  constructor(
    readonly capacity: number,
    /** Called with the bytes in use after every change (the pool-use gauge). */
    private readonly onChange: (used: number) => void = () => {},
  ) {
    if (!(capacity > 0)) throw new Error(`A memory pool needs a positive capacity (got ${capacity})`);
  }

  get used(): number {
    return this.#used;
  }

  /**
   * Takes `bytes` when they fit under `ceiling` (the capacity unless a lower one is given: a class of
   * requests that may only use part of the pool); false, taking nothing, when they do not.
   */
  tryAllocate(bytes: number, ceiling = this.capacity): boolean {
    if (this.#used + bytes > Math.min(ceiling, this.capacity)) return false;
    this.allocate(bytes);
    return true;
  }

  /**
   * Takes `bytes` whether or not they fit: for the small allowance each connection has outside the
   * budget (so a full pool never stops a handshake or a heartbeat). The pool shows the overdraft and
   * lends nothing more until it is paid back.
   */
  allocate(bytes: number): void {
    this.#used += bytes;
    this.onChange(this.#used);
  }

  release(bytes: number): void {
    if (bytes <= 0) return;
    this.#used = Math.max(0, this.#used - bytes);
    this.onChange(this.#used);
    if (this.#waiters.size > 0 && !this.#waking) {
      // After the caller's turn: a waiter that is granted memory goes on reading, which may release more.
      this.#waking = true;
      queueMicrotask(() => this.#wake());
    }
  }

  /**
   * Calls `retry` after memory is given back, in the order the waiters came, until it returns true
   * (it took what it needed, or no longer needs it). Returns a function that stops waiting.
   */
  whenReleased(retry: () => boolean): () => void {
    this.#waiters.add(retry);
    return () => void this.#waiters.delete(retry);
  }

  /**
   * Takes `bytes`, waiting up to `timeoutMs` for them to fit; false when they did not in time or
   * `signal` aborted. Never more than the capacity: such a request can never fit.
   */
  acquire(bytes: number, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    if (bytes > this.capacity) return Promise.resolve(false);
    if (this.tryAllocate(bytes)) return Promise.resolve(true);
    return new Promise((resolve) => {
      let settled = false;
      const settle = (ok: boolean) => {
        if (settled) return;
        settled = true;
        stop();
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(ok);
      };
      const stop = this.whenReleased(() => {
        if (settled) return true;
        if (!this.tryAllocate(bytes)) return false;
        settle(true);
        return true;
      });
      const timer = setTimeout(() => settle(false), timeoutMs);
      const onAbort = () => settle(false);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #wake(): void {
    this.#waking = false;
    for (const retry of [...this.#waiters]) {
      if (!this.#waiters.has(retry)) continue;
      if (retry()) this.#waiters.delete(retry);
      if (this.#used >= this.capacity) break;
    }
  }
}
