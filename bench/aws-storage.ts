import { AsyncLocalStorage } from 'node:async_hooks';
import type { Storage } from '../src/compose.js';
import { itemBytes } from '../src/storage/observed-stores.js';
import type { MetadataStore, MetaItem, ObjectStore } from '../src/storage/ports.js';
import type { Purgatory } from '../src/timer/purgatory.js';
import { type Distribution, type LatencyProfile, sampleMs } from './latency-profiles.js';

/**
 * The AWS adapters (over the emulators) behind the latency of bench/latency-profiles.ts: each call
 * goes to the emulator at once and answers when both the emulator has answered and its drawn time
 * has passed, so a call takes its drawn time unless the emulator (sharing this loaded machine) is
 * slower; those calls are counted (`overruns`), the measure of how far a run is from its profile. Every
 * call is noted in the trace of the HTTP request it serves (an AsyncLocalStorage context the Lambda
 * model opens), which gives the per-request breakdown: which calls a produce makes, in what order,
 * and how much of its time each took.
 */
export interface CallSpan {
  /** `PutObject`, `GetItem`, `UpdateItem`, ... as the adapters name them. */
  op: string;
  /** Metadata calls: the item's partition and sort key. */
  key?: string;
  startMs: number;
  endMs: number;
  /** The time drawn from the profile: what the call takes on AWS; the rest of its span is this process's. */
  drawnMs: number;
}

export interface RequestTrace {
  route: string;
  startMs: number;
  calls: CallSpan[];
  /** CPU time its callbacks ran for (bench/aws-cpu.ts). */
  cpuMs: number;
  /** Set once the request has answered: calls made after (work it left running) are not its own. */
  closed?: boolean;
}

/**
 * The storage time on a request's critical path: the chain of calls its answer waited on, traced
 * back from its end (each link the call that ended last before the next link began), summing each
 * link's drawn time (what it takes on AWS). The rest of the request is this process's: CPU before
 * the first call, between calls and after the last, and answers handled late.
 */
export function chainStorageMs(t: { durationMs: number; calls: CallSpan[] }): number {
  let cursor = t.durationMs;
  let total = 0;
  for (;;) {
    let link: CallSpan | undefined;
    for (const c of t.calls) if (c.endMs <= cursor && c.startMs < cursor && (!link || c.endMs > link.endMs)) link = c;
    if (!link) return total;
    total += Math.min(link.drawnMs, link.endMs - link.startMs);
    cursor = link.startMs;
  }
}

export const requestTrace = new AsyncLocalStorage<RequestTrace>();

/** The drawn latency, on a timer outside the request's context (not one of the request's own waits: bench/aws-cpu.ts). */
const sleep = (ms: number) =>
  ms > 0 ? new Promise<void>((r) => requestTrace.exit(() => setTimeout(r, ms))) : Promise.resolve();

/**
 * A purgatory's waits (a fetch held for min_bytes, acks=all) in the trace of the request that waits,
 * as `Wait` spans drawn at the time they took: Lambda bills a request's wait for data whatever the
 * CPU does, and how long it waits depends on the producers', not this request's, progress.
 */
export function tracedWaits(purgatory: Purgatory): void {
  const awaitCondition = purgatory.awaitCondition.bind(purgatory);
  purgatory.awaitCondition = async (options) => {
    const trace = requestTrace.getStore();
    const startMs = performance.now();
    try {
      return await awaitCondition(options);
    } finally {
      const endMs = performance.now();
      if (trace && !trace.closed)
        trace.calls.push({
          op: 'Wait',
          startMs: startMs - trace.startMs,
          endMs: endMs - trace.startMs,
          drawnMs: endMs - startMs,
        });
    }
  };
}

const METADATA_OPS: Record<string, { op: string; write: boolean }> = {
  get: { op: 'GetItem', write: false },
  query: { op: 'Query', write: false },
  put: { op: 'UpdateItem', write: true },
  delete: { op: 'DeleteItem', write: true },
};
const OBJECT_OPS: Record<string, string> = {
  put: 'PutObject',
  get: 'GetObject',
  head: 'HeadObject',
  list: 'ListObjectsV2',
  delete: 'DeleteObjects',
};

/** Calls whose emulator took longer than the drawn time, per call name, and all calls. */
export interface Overruns {
  calls: Record<string, number>;
  overrun: Record<string, number>;
}

export const overruns: Overruns = { calls: {}, overrun: {} };

/**
 * Calls per function and call name, with the bytes of their bodies (PutObject): which function
 * made the object writes a run pays for. `background`: calls outside any request (timers, sweeps).
 */
export const callsByRoute: Record<string, Record<string, { calls: number; bytes: number }>> = {};

/**
 * Metadata calls per function, call name and kind of item (its key with topic names, numbers and
 * ids replaced: `GetItem pid#N meta`, `Query clog#T#N`), with their capacity units as
 * counting-stores.ts estimates them (strongly consistent reads; a delete as one unit): where a
 * run's DynamoDB bill goes.
 */
export const callsByItem: Record<string, Record<string, { calls: number; units: number }>> = {};

const readUnits = (items: MetaItem[]) =>
  Math.max(1, Math.ceil(items.reduce((n, i) => n + itemBytes(i.pk, i.sk, i.version, i.value), 0) / 4096));

/** A metadata call's capacity units, from its arguments and answer. */
function unitsOf(method: string, args: unknown[], answer: unknown): number {
  if (method === 'get') return readUnits(answer ? [answer as MetaItem] : []);
  if (method === 'query') return readUnits(answer as MetaItem[]);
  if (method === 'put') return Math.max(1, Math.ceil(itemBytes(String(args[0]), String(args[1]), 1, args[2]) / 1024));
  return 1;
}

const itemKind = (key: string) =>
  key
    .replace(/aws-[a-z0-9-]+/g, 'T')
    .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, 'ID')
    .replace(/\d+/g, 'N')
    .trim();

export function withLatency(storage: Storage, profile: LatencyProfile): Storage {
  const o = profile.objects;
  return {
    metadata: traced(storage.metadata, (method) => {
      const m = METADATA_OPS[method];
      return (
        m && {
          op: m.op,
          delay: () => sampleMs(m.write ? profile.metadataWrite : profile.metadataRead),
          key: (args) => `${String(args[0])} ${typeof args[1] === 'string' ? args[1] : ''}`,
        }
      );
    }),
    stores: storage.stores.map((store) =>
      traced(store, (method) => {
        const op = OBJECT_OPS[method];
        if (!op) return undefined;
        const d: Distribution = method === 'put' || method === 'delete' ? o.put : o.get;
        return {
          op,
          delay: (args) => {
            const body = method === 'put' ? (args[1] as Uint8Array) : undefined;
            return sampleMs(d) + (body ? body.byteLength / o.bytesPerMs : 0);
          },
        };
      }),
    ),
    close: () => storage.close(),
  };
}

/**
 * The port with the methods `pick` names delayed. A GET's body time is not added (its size is known
 * only after it): fetch latency here is the first byte's.
 */
function traced<T extends MetadataStore | ObjectStore>(
  inner: T,
  pick: (
    method: string,
  ) => { op: string; delay: (args: unknown[]) => number; key?: (args: unknown[]) => string } | undefined,
): T {
  return new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      const picked = pick(String(prop));
      if (!picked) return fn.bind(target);
      return async (...args: unknown[]) => {
        const trace = requestTrace.getStore();
        const startMs = performance.now();
        const drawn = picked.delay(args);
        const route = trace?.route ?? 'background';
        const byOp = (callsByRoute[route] ??= {});
        const byItem =
          picked.key &&
          ((callsByItem[route] ??= {})[`${picked.op} ${itemKind(picked.key(args))}`] ??= { calls: 0, units: 0 });
        const counted = (byOp[picked.op] ??= { calls: 0, bytes: 0 });
        counted.calls++;
        if (args[1] instanceof Uint8Array) counted.bytes += args[1].byteLength;
        try {
          const [answer] = await Promise.all([
            (async () => {
              let value: unknown;
              try {
                value = await fn.apply(target, args);
              } finally {
                // A failed condition is billed as the write.
                if (byItem) {
                  byItem.calls++;
                  byItem.units += unitsOf(String(prop), args, value);
                }
              }
              const took = performance.now() - startMs;
              overruns.calls[picked.op] = (overruns.calls[picked.op] ?? 0) + 1;
              if (took > drawn) overruns.overrun[picked.op] = (overruns.overrun[picked.op] ?? 0) + 1;
              return value;
            })(),
            sleep(drawn),
          ]);
          return answer;
        } finally {
          if (trace && !trace.closed)
            trace.calls.push({
              op: picked.op,
              ...(picked.key ? { key: picked.key(args) } : {}),
              startMs: startMs - trace.startMs,
              endMs: performance.now() - trace.startMs,
              drawnMs: drawn,
            });
        }
      };
    },
  });
}
