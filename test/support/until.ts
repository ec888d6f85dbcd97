/**
 * Polling helpers of tests that watch something happen in the background: a condition met, or a
 * count that stopped moving. Polls every 5 ms; the bounds are generous, since a loaded machine is
 * slow, and only a condition never met fails.
 */

/** Resolves once `cond` holds; fails after `ms` naming `what`. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Resolves once `counter.n` has not moved for `ms` (a loaded machine sends a wake-up's requests late). */
export async function quiet(counter: { n: number }, ms = 500): Promise<void> {
  for (let last = -1; counter.n !== last; ) {
    last = counter.n;
    await new Promise((r) => setTimeout(r, ms));
  }
}
