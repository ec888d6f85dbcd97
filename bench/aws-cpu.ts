import { createHook } from 'node:async_hooks';
import type { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Each request's own CPU time, for the Lambda model's billed duration (bench/aws-lambda.ts): one
 * process plays every Lambda here, so a request's wall time is mostly its wait for this machine's
 * CPU, which a Lambda environment (one request at a time) does not have. An async hook charges the
 * time each callback runs to the request whose context it runs in (the store of `context`, found
 * when the callback begins; nested callbacks charge their own request and pause the outer one's
 * clock; a callback of no request stops the clock). Time is the process's CPU time (`process.cpuUsage`, user + system), not wall time, so a
 * callback descheduled by the machine's other work is not charged for the wait; the process's other
 * threads (garbage collection helpers) are charged to whichever callback runs meanwhile.
 */
export interface CpuCharged {
  cpuMs: number;
}

/**
 * A timer (setTimeout, not unref'd) created in a request's context fired: a wait the request chose
 * (a back-off, a sequence gap's wait), which Lambda bills as it would here. `delayMs` is what it asked for: what
 * it takes with a free CPU.
 */
export type TimerFired<T> = (target: T, createdMs: number, firedMs: number, delayMs: number) => void;

export interface CpuAccounting {
  /** Runs `fn` synchronously in `target`'s context, charging its synchronous part to `target` too. */
  run<R>(target: CpuCharged, fn: () => R): R;
  /** Stops charging (the hook is disabled). */
  stop(): void;
}

const cpuNowMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

export function accountCpu<T extends CpuCharged>(
  context: AsyncLocalStorage<T>,
  onTimer?: TimerFired<T>,
): CpuAccounting {
  const timers = new Map<number, { target: T; createdMs: number; delayMs: number; timeout: NodeJS.Timeout }>();
  const outer: (CpuCharged | undefined)[] = [];
  let current: CpuCharged | undefined;
  let since = cpuNowMs();
  // The clock is read only where the charged request changes (a read costs a system call, ~3 µs:
  // read around every callback it would cost more than most callbacks). So the event loop's own
  // time between two callbacks is charged to the request that ran last, until a callback of another
  // request, or of none, begins.
  const switchTo = (next: CpuCharged | undefined) => {
    if (next === current) return;
    const now = cpuNowMs();
    if (current) current.cpuMs += now - since;
    current = next;
    since = now;
  };
  const enter = (next: CpuCharged | undefined) => {
    outer.push(current);
    switchTo(next);
  };
  const leave = () => {
    const back = outer.pop();
    if (outer.length > 0) switchTo(back);
  };
  const hook = createHook({
    init: (asyncId, type, _trigger, resource) => {
      const target = onTimer && type === 'Timeout' ? context.getStore() : undefined;
      const delayMs = (resource as { _idleTimeout?: number })._idleTimeout ?? 0;
      if (!target || delayMs < 1) return;
      const now = performance.now();
      // Timers cleared before they fire are dropped here (a destroy hook would track every promise).
      if (timers.size >= 10_000)
        for (const [id, t] of timers) if (t.createdMs + t.delayMs < now - 1000) timers.delete(id);
      timers.set(asyncId, { target, createdMs: now, delayMs, timeout: resource as NodeJS.Timeout });
    },
    before: (asyncId) => {
      const timer = timers.get(asyncId);
      if (timer) {
        timers.delete(asyncId);
        // An unref'd timer is work left for later (a re-check, a deferred notification), not a wait.
        if (timer.timeout.hasRef()) onTimer!(timer.target, timer.createdMs, performance.now(), timer.delayMs);
      }
      enter(context.getStore());
    },
    after: () => leave(),
  }).enable();
  return {
    run: (target, fn) => {
      enter(target);
      try {
        return context.run(target as T, fn);
      } finally {
        leave();
      }
    },
    stop: () => {
      hook.disable();
      switchTo(undefined);
    },
  };
}
