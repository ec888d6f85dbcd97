import { createStorage, type Storage } from '../../src/compose.js';
import { observeStorage, type StorageCall } from '../../src/storage/observed-stores.js';
import type { MetadataStore, ObjectStore } from '../../src/storage/ports.js';
import type { LatencyProfile } from './profiles.js';
import type { VirtualTime } from './virtual-time.js';

/**
 * The simulation's storage: the memory stores behind a latency per call (on simulated time), observed
 * by the one storage decorator (src/storage/observed-stores.ts), whose every call the `Traffic`
 * below counts per item, per partition key and per object prefix, in one-second windows of
 * simulated time. Latency can be switched off while a scenario sets up its data.
 */
export interface SimulatedStorage {
  storage: Storage;
  traffic: Traffic;
  /** Latency on (the measured phase) or off (set-up). */
  setLatency(on: boolean): void;
}

export function simulatedStorage(time: VirtualTime, profile: LatencyProfile, replicaStores: number): SimulatedStorage {
  const base = createStorage({ kind: 'memory', replicaStores });
  let on = false;
  const wait = (ms: number) => (on && ms > 0 ? time.sleep(ms) : Promise.resolve());
  const traffic = new Traffic(time);
  const delayedStorage: Storage = {
    metadata: delayed(base.metadata, () => wait(profile.metadataMs), ['get', 'query', 'put', 'delete']),
    stores: base.stores.map((s) => delayed(s, () => wait(profile.objectMs), ['put', 'get', 'head', 'list', 'delete'])),
    close: () => base.close(),
  };
  return {
    storage: observeStorage(delayedStorage, (call) => traffic.record(call)),
    traffic,
    setLatency: (value) => {
      on = value;
    },
  };
}

/** The port with `methods` answering after `wait()`. */
function delayed<T extends MetadataStore | ObjectStore>(inner: T, wait: () => Promise<void>, methods: string[]): T {
  return new Proxy(inner, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      if (!methods.includes(String(prop))) return fn.bind(target);
      return async (...args: unknown[]) => {
        await wait();
        return fn.apply(target, args);
      };
    },
  });
}

/** Per key, the amount in the current one-second window and the largest window so far. */
class PeakRate {
  private readonly windows = new Map<string, { second: number; amount: number; peak: number }>();

  add(key: string, amount: number, second: number): void {
    const w = this.windows.get(key);
    if (!w) this.windows.set(key, { second, amount, peak: amount });
    else {
      if (w.second !== second) {
        w.second = second;
        w.amount = 0;
      }
      w.amount += amount;
      if (w.amount > w.peak) w.peak = w.amount;
    }
  }

  /** The highest one-second amount of `key` (0: none). */
  peakOf(key: string): number {
    return this.windows.get(key)?.peak ?? 0;
  }

  /** The key with the highest one-second peak, and that peak. */
  top(): { key: string; perSecond: number } {
    let best = { key: '-', perSecond: 0 };
    for (const [key, w] of this.windows) if (w.peak > best.perSecond) best = { key, perSecond: w.peak };
    return best;
  }
}

export interface TrafficSummary {
  calls: Record<string, number>;
  metadataBytes: number;
  objectBytes: number;
  writeUnits: number;
  readUnits: number;
  /** The item, partition key and prefix with the highest one-second peak of each kind of use. */
  peakItemWriteUnits: { key: string; perSecond: number };
  peakItemReadUnits: { key: string; perSecond: number };
  peakKeyWriteUnits: { key: string; perSecond: number };
  peakKeyReadUnits: { key: string; perSecond: number };
  peakPrefixPuts: { key: string; perSecond: number };
  peakPrefixGets: { key: string; perSecond: number };
  largestItem: { key: string; bytes: number };
}

/**
 * Counts of the observed calls while recording: calls by operation, bytes, DynamoDB capacity units
 * (with DynamoDB's rounding: ceil(size / 1 KB) per write, a failed condition included, and per
 * delete of the size of the item deleted; ceil(size / 4 KB), at least 1, per strongly consistent
 * read or query) and one-second peaks per item (pk|sk),
 * per partition key and per S3 prefix (the key up to its last `/`, the unit S3 partitions by).
 * S3's write class is PUT and DELETE, its read class GET, HEAD and LIST.
 */
export class Traffic {
  recording = false;
  private c = freshCounts();
  /**
   * Each item's size as last written or read, recording or not (a delete names no size, and
   * DynamoDB bills it by the item's: an offset entry with 4 KB of metadata is 5 units to delete).
   */
  private readonly sizes = new Map<string, number>();

  constructor(private readonly time: { now(): number }) {}

  /** Starts counting afresh. */
  start(): void {
    this.c = freshCounts();
    this.recording = true;
  }

  /** The highest write units in one second on partition key `pk` while recording. */
  peakKeyWriteUnitsOf(pk: string): number {
    return this.c.keyWrites.peakOf(pk);
  }

  /** Write units of each write of `item` (pk|sk) while recording: what one write of it costs. */
  writesOf(item: string): number[] {
    return this.c.writesOf.get(item) ?? [];
  }

  record(call: StorageCall): void {
    const known = call.port === 'metadata' && call.op === 'DeleteItem' ? this.sizes.get(`${call.pk}|${call.sk}`) : 0;
    this.noteItem(call);
    if (!this.recording) return;
    const second = Math.floor(this.time.now() / 1000);
    this.c.calls[call.op] = (this.c.calls[call.op] ?? 0) + 1;
    if (call.port === 'metadata') {
      const item = call.op === 'Query' ? undefined : `${call.pk}|${call.sk}`;
      if (call.op === 'GetItem' || call.op === 'Query') {
        const units = Math.max(1, Math.ceil(call.itemBytes / 4096));
        this.c.readUnits += units;
        this.c.metadataBytes += call.itemBytes;
        if (item) this.c.itemReads.add(item, units, second);
        this.c.keyReads.add(call.pk, units, second);
        if (item) this.noteSize(item, call.itemBytes);
      } else {
        const bytes = call.op === 'UpdateItem' ? call.itemBytes : 0;
        // A delete of an item of unknown size (written before these counts began, or found by a
        // query only) is billed as the least, 1 unit.
        const units = Math.max(1, Math.ceil((call.op === 'UpdateItem' ? bytes : (known ?? 0)) / 1024));
        this.c.writeUnits += units;
        this.c.metadataBytes += bytes;
        this.c.itemWrites.add(item!, units, second);
        this.c.keyWrites.add(call.pk, units, second);
        if (call.op === 'UpdateItem') {
          this.noteSize(item!, bytes);
          const list = this.c.writesOf.get(item!) ?? [];
          list.push(units);
          this.c.writesOf.set(item!, list);
        }
      }
      return;
    }
    if (call.op === 'PutObject' || call.op === 'GetObject') this.c.objectBytes += call.bytes;
    if (call.op === 'DeleteObjects') return; // one request for many keys of possibly many prefixes
    const prefix = call.op === 'ListObjectsV2' ? call.prefix : call.key.slice(0, call.key.lastIndexOf('/') + 1);
    (call.op === 'PutObject' ? this.c.prefixPuts : this.c.prefixGets).add(prefix, 1, second);
  }

  summary(): TrafficSummary {
    return {
      calls: { ...this.c.calls },
      metadataBytes: this.c.metadataBytes,
      objectBytes: this.c.objectBytes,
      writeUnits: this.c.writeUnits,
      readUnits: this.c.readUnits,
      peakItemWriteUnits: this.c.itemWrites.top(),
      peakItemReadUnits: this.c.itemReads.top(),
      peakKeyWriteUnits: this.c.keyWrites.top(),
      peakKeyReadUnits: this.c.keyReads.top(),
      peakPrefixPuts: this.c.prefixPuts.top(),
      peakPrefixGets: this.c.prefixGets.top(),
      largestItem: { ...this.c.largest },
    };
  }

  /** Keeps `sizes` to the items as they are: written, read, or gone. */
  private noteItem(call: StorageCall): void {
    if (call.port !== 'metadata' || call.op === 'Query' || call.failed) return;
    const item = `${call.pk}|${call.sk}`;
    if (call.op === 'UpdateItem') {
      if (!call.conditionFailed) this.sizes.set(item, call.itemBytes);
    } else if (call.op === 'GetItem') {
      if (call.found) this.sizes.set(item, call.itemBytes);
      else this.sizes.delete(item);
    } else if (!call.conditionFailed) this.sizes.delete(item);
  }

  private noteSize(item: string, bytes: number): void {
    if (bytes > this.c.largest.bytes) this.c.largest = { key: item, bytes };
  }
}

function freshCounts() {
  return {
    calls: {} as Record<string, number>,
    metadataBytes: 0,
    objectBytes: 0,
    writeUnits: 0,
    readUnits: 0,
    itemWrites: new PeakRate(),
    itemReads: new PeakRate(),
    keyWrites: new PeakRate(),
    keyReads: new PeakRate(),
    prefixPuts: new PeakRate(),
    prefixGets: new PeakRate(),
    largest: { key: '-', bytes: 0 },
    writesOf: new Map<string, number[]>(),
  };
}

/** Calls and DynamoDB units per operation between two summaries (`before` undefined: from the start). */
export const perOp = (t: TrafficSummary, before: TrafficSummary | undefined, n: number) => {
  const calls = (x: TrafficSummary | undefined) => Object.values(x?.calls ?? {}).reduce((a, b) => a + b, 0);
  const d = (f: (x: TrafficSummary) => number) => (f(t) - (before ? f(before) : 0)) / Math.max(1, n);
  return `${((calls(t) - calls(before)) / Math.max(1, n)).toFixed(2)} calls, ${d((x) => x.readUnits).toFixed(2)} RCU, ${d((x) => x.writeUnits).toFixed(2)} WCU`;
};
