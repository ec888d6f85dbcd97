/**
 * One process's requests on one key take turns: each runs once the one before it on the key has
 * settled (fulfilled or not). Used where this process's own concurrent read-modify-writes of one
 * item would otherwise read the same version and all but one lose their conditional write; other
 * processes' writers are still met by the condition.
 */
export class Turns {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `fn` after the work queued before it on `key`. */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => {});
    this.tails.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  /** Whether work of this process on `key` is running or queued. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }
}
