import { describe, expect, it } from 'vitest';
import { DelayedOperation } from '../../src/timer/delayed-operation.js';
import { Purgatory } from '../../src/timer/purgatory.js';
import { SystemTimer } from '../../src/timer/system-timer.js';
import { FakeClock, flush, runUntil } from './helpers.js';

/** A fetch-like operation: completes once `state.bytes >= minBytes`; its check may be made to wait. */
class TestOperation extends DelayedOperation {
  completions = 0;
  expirations = 0;
  checks = 0;
  /** While set, each check waits for this promise (simulating a slow read of remote state). */
  gate: Promise<void> | undefined;

  constructor(
    delayMs: number,
    private readonly state: { bytes: number },
    private readonly minBytes = 1,
  ) {
    super(delayMs);
  }

  async tryComplete(): Promise<boolean> {
    this.checks++;
    const bytes = this.state.bytes; // read before the (simulated) latency, like a real store read
    if (this.gate) await this.gate;
    return bytes >= this.minBytes && this.forceComplete();
  }

  protected override onComplete(): void {
    this.completions++;
  }

  protected override onExpiration(): void {
    this.expirations++;
  }
}

const deferred = (): { promise: Promise<void>; resolve: () => void } => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

const setup = (): { clock: FakeClock; timer: SystemTimer; purgatory: Purgatory<TestOperation> } => {
  const clock = new FakeClock(0);
  const timer = new SystemTimer({ clock, tickMs: 1, wheelSize: 20 });
  return { clock, timer, purgatory: new Purgatory<TestOperation>({ timer, name: 'Fetch' }) };
};

describe('Purgatory', () => {
  it('completes at once when the condition already holds, watching nothing', async () => {
    const { timer, purgatory } = setup();
    const op = new TestOperation(500, { bytes: 10 });
    expect(await purgatory.tryCompleteElseWatch(op, ['p0'])).toBe(true);
    expect(op.outcome).toBe('completed');
    expect(op.completions).toBe(1);
    expect(purgatory.watched('p0')).toBe(0);
    expect(purgatory.delayed).toBe(0);
    expect(timer.size).toBe(0);
  });

  it('watches, then completes through checkAndComplete and leaves every watch list', async () => {
    const { timer, purgatory } = setup();
    const state = { bytes: 0 };
    const op = new TestOperation(500, state);
    expect(await purgatory.tryCompleteElseWatch(op, ['p0', 'p1', 'p0'])).toBe(false);
    expect(purgatory.watched('p0')).toBe(1);
    expect(purgatory.watched('p1')).toBe(1);
    expect(purgatory.delayed).toBe(1);
    expect(timer.size).toBe(1);

    expect(await purgatory.checkAndComplete('p1')).toBe(0); // condition still false
    expect(op.isDone).toBe(false);

    state.bytes = 5;
    expect(await purgatory.checkAndComplete('other')).toBe(0);
    expect(await purgatory.checkAndComplete('p1')).toBe(1);
    expect(op.outcome).toBe('completed');
    expect(op.completions).toBe(1);
    expect(op.expirations).toBe(0);
    expect(purgatory.watched('p0')).toBe(0);
    expect(purgatory.watched('p1')).toBe(0);
    expect(purgatory.delayed).toBe(0);
    expect(timer.size).toBe(0); // timeout cancelled
    expect(await purgatory.checkAndComplete('p0')).toBe(0);
  });

  it('completes only the operations whose condition holds', async () => {
    const { purgatory } = setup();
    const state = { bytes: 0 };
    const small = new TestOperation(500, state, 1);
    const large = new TestOperation(500, state, 100);
    await purgatory.tryCompleteElseWatch(small, ['p0']);
    await purgatory.tryCompleteElseWatch(large, ['p0']);
    state.bytes = 10;
    expect(await purgatory.checkAndComplete('p0')).toBe(1);
    expect(small.isCompleted).toBe(true);
    expect(large.isCompleted).toBe(false);
    expect(purgatory.watched('p0')).toBe(1);
  });

  it('expires an operation through the timer', async () => {
    const { timer, purgatory } = setup();
    const op = new TestOperation(500, { bytes: 0 });
    await purgatory.tryCompleteElseWatch(op, ['p0']);
    timer.advanceTo(499);
    expect(op.isDone).toBe(false);
    timer.advanceTo(500);
    expect(op.outcome).toBe('expired');
    expect(op.isCompleted).toBe(true);
    expect(op.completions).toBe(1);
    expect(op.expirations).toBe(1);
    expect(purgatory.watched('p0')).toBe(0);
    expect(purgatory.delayed).toBe(0);
    expect(await purgatory.checkAndComplete('p0')).toBe(0);
  });

  it('cancels: nothing completes, watch lists and timer are cleared', async () => {
    const { timer, purgatory } = setup();
    const state = { bytes: 0 };
    const op = new TestOperation(500, state);
    await purgatory.tryCompleteElseWatch(op, ['p0', 'p1']);
    expect(op.cancel()).toBe(true);
    expect(op.cancel()).toBe(false);
    expect(op.outcome).toBe('cancelled');
    expect(op.isCompleted).toBe(false);
    expect(purgatory.watched('p0') + purgatory.watched('p1')).toBe(0);
    expect(purgatory.delayed).toBe(0);
    expect(timer.size).toBe(0);
    state.bytes = 10;
    expect(await purgatory.checkAndComplete('p0')).toBe(0);
    timer.advanceTo(10_000);
    expect(op.completions + op.expirations).toBe(0);
    expect(op.forceComplete()).toBe(false);
  });

  it('completes exactly once when the timeout fires while a successful check is in flight', async () => {
    const { timer, purgatory } = setup();
    const state = { bytes: 0 };
    const op = new TestOperation(100, state);
    await purgatory.tryCompleteElseWatch(op, ['p0']);
    const gate = deferred();
    op.gate = gate.promise;
    state.bytes = 10;
    const checking = purgatory.checkAndComplete('p0'); // reads bytes = 10, then waits
    timer.advanceTo(100); // the timeout wins the race
    gate.resolve();
    expect(await checking).toBe(0); // its forceComplete() lost
    expect(op.outcome).toBe('expired');
    expect(op.completions).toBe(1);
    expect(op.expirations).toBe(1);
  });

  it('completes exactly once when completion wins the race against the timeout', async () => {
    const { timer, purgatory } = setup();
    const state = { bytes: 0 };
    const op = new TestOperation(100, state);
    await purgatory.tryCompleteElseWatch(op, ['p0']);
    state.bytes = 10;
    const [a, b] = await Promise.all([purgatory.checkAndComplete('p0'), purgatory.checkAndComplete('p0')]);
    expect(a + b).toBe(1);
    timer.advanceTo(100);
    expect(op.outcome).toBe('completed');
    expect(op.completions).toBe(1);
    expect(op.expirations).toBe(0);
    expect(op.checks).toBe(2); // one at registration, one for both notifications: checks never overlap
  });

  it('does not lose a notification that arrives while a check is in flight', async () => {
    const { purgatory } = setup();
    const state = { bytes: 0 };
    const op = new TestOperation(1_000, state);
    const gate = deferred();
    op.gate = gate.promise;
    const registering = purgatory.tryCompleteElseWatch(op, ['p0']); // first check reads bytes = 0 ...
    expect(purgatory.watched('p0')).toBe(1); // ... but the operation is already watched
    state.bytes = 10;
    expect(await purgatory.checkAndComplete('p0')).toBe(0); // coalesced into the in-flight check
    gate.resolve();
    expect(await registering).toBe(true); // the in-flight check re-ran and saw bytes = 10
    expect(op.checks).toBe(2);
    expect(op.outcome).toBe('completed');
  });

  it('refuses to register an operation twice and ignores one already done', async () => {
    const { purgatory } = setup();
    const op = new TestOperation(100, { bytes: 0 });
    await purgatory.tryCompleteElseWatch(op, ['p0']);
    await expect(purgatory.tryCompleteElseWatch(op, ['p1'])).rejects.toThrow(/already been started/);
    expect(purgatory.watched('p1')).toBe(0);
    op.cancel();
    expect(await purgatory.tryCompleteElseWatch(op, ['p1'])).toBe(false);
    expect(purgatory.watched('p1')).toBe(0);
  });

  it('cancels an operation whose first check throws, and reports later check errors', async () => {
    const { timer, purgatory } = setup();
    class Failing extends TestOperation {
      fail = true;
      override async tryComplete(): Promise<boolean> {
        if (this.fail) throw new Error('store unavailable');
        return super.tryComplete();
      }
    }
    const first = new Failing(100, { bytes: 0 });
    await expect(purgatory.tryCompleteElseWatch(first, ['p0'])).rejects.toThrow('store unavailable');
    expect(first.outcome).toBe('cancelled');
    expect(purgatory.watched('p0')).toBe(0);
    expect(timer.size).toBe(0);

    const later = new Failing(100, { bytes: 0 });
    later.fail = false;
    await purgatory.tryCompleteElseWatch(later, ['p0']);
    later.fail = true;
    await expect(purgatory.checkAndComplete('p0')).rejects.toThrow('store unavailable');
    expect(later.isDone).toBe(false); // still pending: its timeout will end it

    const errors: unknown[] = [];
    const reporting = new Purgatory({ timer, onError: (e) => errors.push(e) });
    const third = new Failing(100, { bytes: 0 });
    third.fail = false;
    await reporting.tryCompleteElseWatch(third, ['p0']);
    third.fail = true;
    expect(await reporting.checkAndComplete('p0')).toBe(0);
    expect(errors).toHaveLength(1);
  });

  it('handles many operations over many keys', async () => {
    const { clock, timer, purgatory } = setup();
    const state = { bytes: 0 };
    const ops = Array.from({ length: 300 }, (_, i) => new TestOperation(100 + (i % 50), state, 1 + (i % 3)));
    await Promise.all(ops.map((op, i) => purgatory.tryCompleteElseWatch(op, [`p${i % 7}`, `p${(i + 1) % 7}`])));
    expect(purgatory.delayed).toBe(300);
    state.bytes = 2;
    let completed = 0;
    for (let k = 0; k < 7; k++) completed += await purgatory.checkAndComplete(`p${k}`);
    expect(completed).toBe(200); // minBytes 1 and 2
    await runUntil(timer, clock, 1_000);
    for (const op of ops) expect(op.completions).toBe(1);
    expect(ops.filter((op) => op.outcome === 'expired')).toHaveLength(100);
    for (let k = 0; k < 7; k++) expect(purgatory.watched(`p${k}`)).toBe(0);
    expect(purgatory.delayed).toBe(0);
    expect(timer.size).toBe(0);
  });
});

describe('Purgatory.awaitCondition', () => {
  it('resolves true at once when the condition already holds', async () => {
    const { timer, purgatory } = setup();
    expect(await purgatory.awaitCondition({ keys: ['p0'], timeoutMs: 500, check: async () => true })).toBe(true);
    expect(purgatory.watched('p0')).toBe(0);
    expect(timer.size).toBe(0); // timeout and re-check cancelled
  });

  it('wakes on checkAndComplete', async () => {
    const { timer, purgatory } = setup();
    let hw = 0;
    let checks = 0;
    const waiting = purgatory.awaitCondition({
      keys: ['p0'],
      timeoutMs: 5_000,
      check: async () => {
        checks++;
        return hw > 0;
      },
      recheckBackoffMs: false,
    });
    await flush();
    expect(purgatory.watched('p0')).toBe(1);
    hw = 1;
    expect(await purgatory.checkAndComplete('p0')).toBe(1);
    expect(await waiting).toBe(true);
    expect(checks).toBe(2);
    expect(purgatory.watched('p0')).toBe(0);
    expect(timer.size).toBe(0);
  });

  it('re-checks on a bounded exponential back-off driven by the timer', async () => {
    const { clock, timer, purgatory } = setup();
    const checkedAt: number[] = [];
    let hw = 0;
    const waiting = purgatory.awaitCondition({
      keys: ['p0'],
      timeoutMs: 10_000,
      check: async () => {
        checkedAt.push(clock.now());
        return hw > 0;
      },
      recheckBackoffMs: { initial: 50, max: 400 },
    });
    await runUntil(timer, clock, 2_000);
    expect(checkedAt).toEqual([0, 50, 150, 350, 750, 1150, 1550, 1950]);
    hw = 1; // appended by another process: nobody calls checkAndComplete
    await runUntil(timer, clock, 2_349);
    expect(checkedAt.at(-1)).toBe(1950);
    await runUntil(timer, clock, 2_350);
    expect(await waiting).toBe(true);
    expect(checkedAt.at(-1)).toBe(2350);
    expect(timer.size).toBe(0);
  });

  it('resolves false at the timeout', async () => {
    const { clock, timer, purgatory } = setup();
    let settled: boolean | undefined;
    const waiting = purgatory.awaitCondition({ keys: ['p0'], timeoutMs: 300, check: async () => false });
    void waiting.then((v) => (settled = v));
    await runUntil(timer, clock, 299);
    expect(settled).toBeUndefined();
    await runUntil(timer, clock, 300);
    expect(settled).toBe(false);
    expect(await waiting).toBe(false);
    expect(purgatory.watched('p0')).toBe(0);
    expect(timer.size).toBe(0); // no back-off re-check left behind
  });

  it('rejects with the abort reason when the signal aborts, and cleans up', async () => {
    const { clock, timer, purgatory } = setup();
    const controller = new AbortController();
    let checks = 0;
    const waiting = purgatory.awaitCondition({
      keys: ['p0'],
      timeoutMs: 5_000,
      check: async () => {
        checks++;
        return false;
      },
      signal: controller.signal,
    });
    await runUntil(timer, clock, 60);
    const reason = new Error('client disconnected');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(purgatory.watched('p0')).toBe(0);
    expect(timer.size).toBe(0);
    const checksAtAbort = checks;
    await runUntil(timer, clock, 10_000);
    expect(checks).toBe(checksAtAbort);
  });

  it('rejects at once, without checking, when the signal is already aborted', async () => {
    const { purgatory } = setup();
    let checks = 0;
    const waiting = purgatory.awaitCondition({
      keys: ['p0'],
      timeoutMs: 5_000,
      check: async () => {
        checks++;
        return true;
      },
      signal: AbortSignal.abort(),
    });
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    expect(checks).toBe(0);
    expect(purgatory.watched('p0')).toBe(0);
  });

  it('rejects when the check throws', async () => {
    const { timer, purgatory } = setup();
    let fail = false;
    const waiting = purgatory.awaitCondition({
      keys: ['p0'],
      timeoutMs: 5_000,
      check: async () => {
        if (fail) throw new Error('throttled');
        return false;
      },
    });
    await flush();
    fail = true;
    expect(await purgatory.checkAndComplete('p0')).toBe(0);
    await expect(waiting).rejects.toThrow('throttled');
    expect(purgatory.watched('p0')).toBe(0);
    expect(timer.size).toBe(0);
  });

  it('validates the back-off', async () => {
    const { purgatory } = setup();
    const check = async (): Promise<boolean> => false;
    await expect(
      purgatory.awaitCondition({ keys: [], timeoutMs: 1, check, recheckBackoffMs: { initial: 0, max: 10 } }),
    ).rejects.toThrow(RangeError);
    await expect(
      purgatory.awaitCondition({ keys: [], timeoutMs: 1, check, recheckBackoffMs: { initial: 10, max: 5 } }),
    ).rejects.toThrow(RangeError);
  });

  it('shares keys with ordinary operations', async () => {
    const { purgatory } = setup();
    let ready = false;
    const op = new TestOperation(1_000, { bytes: 0 });
    const generic = purgatory as unknown as Purgatory;
    await generic.tryCompleteElseWatch(op, ['p0']);
    const waiting = generic.awaitCondition({ keys: ['p0'], timeoutMs: 1_000, check: async () => ready });
    await flush();
    expect(generic.watched('p0')).toBe(2);
    ready = true;
    expect(await generic.checkAndComplete('p0')).toBe(1);
    expect(await waiting).toBe(true);
    expect(generic.watched('p0')).toBe(1);
  });
});
