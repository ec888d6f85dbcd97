/** Test helpers of the share group suites: a clock the test moves, and the HTTP calls of a worker. */
import { expect } from 'vitest';
import type { testApp } from '../support/test-app.js';

export interface Received {
  topic_name: string;
  partition_id: number;
  offset: number;
  delivery_count: number;
  lock_expires_at: string;
  value: { type: string; data: string } | null;
}

export function manualClock(start = 1_700_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

export function shareClient(call: ReturnType<typeof testApp>['call']) {
  return {
    produce: async (topic: string, values: string[], partition = 0) => {
      const res = await call('POST', `topics/${topic}/records:batch`, {
        entries: values.map((v, i) => ({ id: i, partition_id: partition, value: { type: 'STRING', data: v } })),
      });
      expect(res.body.failures, JSON.stringify(res.body.failures)).toEqual([]);
    },
    receive: async (group: string, topics: string[], member: string, max = 500) => {
      const res = await call('POST', `share-groups/${group}/records:receive`, {
        topics,
        member_id: member,
        max_records: max,
        format: 'string',
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data as Received[];
    },
    ack: async (
      group: string,
      member: string,
      acks: { topic: string; partition?: number; offset: number; last?: number; type: string; count?: number }[],
    ) => {
      const res = await call('POST', `share-groups/${group}/records:acknowledge`, {
        member_id: member,
        acknowledgements: acks.map((a) => ({
          topic_name: a.topic,
          partition_id: a.partition ?? 0,
          offset: a.offset,
          ...(a.last !== undefined ? { last_offset: a.last } : {}),
          type: a.type,
          ...(a.count !== undefined ? { delivery_count: a.count } : {}),
        })),
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.data as { offset: number; error: string | null }[]).map((d) => d.error);
    },
    describe: async (group: string) => (await call('GET', `share-groups/${group}`)).body,
    earliest: async (group: string) =>
      expect(
        (await call('PUT', `share-groups/${group}/configs/share.auto.offset.reset`, { value: 'earliest' })).status,
      ).toBe(204),
  };
}

/** A record as a receive answers it, the fields the checker reads. */
export interface DeliveryAnswer {
  partition_id: number;
  offset: number;
  delivery_count: number;
  lock_expires_at: string;
}

export interface Delivery {
  key: string;
  worker: string;
  count: number;
  /** The server's clock when it took the record: the lock's end minus the lock duration. */
  from: number;
  until: number;
  /** When the worker sent a release or reject of it (a record given up is free from then on). */
  givenUpAt?: number;
}

/**
 * The share group's promise as the worker suites check it (concurrent-workers, killed-servers):
 * fed every receive's answer and every acknowledgement answered as applied, it names each time a
 * record was held by two workers at once while its lock (as answered) was valid, accepted twice,
 * delivered again once accepted, or both accepted and rejected. A delivery whose answer was lost is
 * not seen; the one after it started later still, so the rules hold over the deliveries seen.
 */
export class ShareChecker {
  readonly deliveries = new Map<string, Delivery[]>();
  /** Delivery counts of the acknowledgements applied, by record and type. */
  readonly accepted = new Map<string, number[]>();
  readonly rejected = new Map<string, number[]>();
  private readonly found: string[] = [];

  constructor(private readonly lockMs: number) {}

  received(worker: string, r: DeliveryAnswer): Delivery {
    const key = `${r.partition_id}/${r.offset}`;
    const until = Date.parse(r.lock_expires_at);
    const d: Delivery = { key, worker, count: r.delivery_count, from: until - this.lockMs, until };
    const list = this.deliveries.get(key) ?? [];
    if (list.some((o) => o.count === d.count))
      this.found.push(`${key} delivery ${d.count} answered to ${worker} and to another`);
    list.push(d);
    this.deliveries.set(key, list);
    return d;
  }

  /** The worker sends a release or reject of `d` at `at`: another may take the record from then on. */
  givenUp(d: Delivery, at: number): void {
    d.givenUpAt ??= at;
  }

  /** An acknowledgement of `d` answered as applied (or known to have applied). */
  applied(d: Delivery, type: string): void {
    const answered = type === 'accept' ? this.accepted : type === 'reject' ? this.rejected : undefined;
    answered?.set(d.key, [...(answered.get(d.key) ?? []), d.count]);
  }

  /** Every rule broken over what was seen. */
  violations(): string[] {
    const out = [...this.found];
    // Held by two at once: each delivery of a record starts after the one before it ended, by its
    // lock's end or by a release or reject sent.
    for (const [key, list] of this.deliveries) {
      const sorted = [...list].sort((a, b) => a.count - b.count);
      for (let i = 1; i < sorted.length; i++) {
        const prev = sorted[i - 1]!;
        const next = sorted[i]!;
        const freeFrom = Math.min(prev.until, prev.givenUpAt ?? Infinity);
        if (next.from < freeFrom)
          out.push(
            `${key} delivery ${next.count} to ${next.worker} at ${next.from} while ${prev.worker} held delivery ${prev.count} until ${freeFrom}`,
          );
      }
    }
    // Accepted once, and never delivered again after the delivery that was accepted.
    for (const [key, counts] of this.accepted) {
      if (counts.length > 1) out.push(`${key} accepted ${counts.length} times`);
      const later = (this.deliveries.get(key) ?? []).filter((d) => d.count > counts[0]!);
      if (later.length > 0)
        out.push(`${key} delivered again (${later.map((d) => d.count)}) after accept of ${counts[0]}`);
    }
    for (const [key, counts] of this.rejected)
      if (this.accepted.has(key)) out.push(`${key} accepted (${this.accepted.get(key)}) and rejected (${counts})`);
    return out;
  }

  /** Deliveries seen, over all records. */
  get deliveryTotal(): number {
    let n = 0;
    for (const list of this.deliveries.values()) n += list.length;
    return n;
  }

  /** The highest delivery count seen of each record that got more than `limit`. */
  over(limit: number): [string, number][] {
    return [...this.deliveries]
      .map(([key, list]): [string, number] => [key, Math.max(...list.map((d) => d.count))])
      .filter(([, n]) => n > limit);
  }
}

/**
 * A group whose work is done, as `GET /share-groups/{g}` answers it: no lag, and each of its
 * `partitions` share-partitions with SPSO = SPEO = the high watermark. Returns the records in them.
 */
export function expectFinished(
  described: { lag: number; partitions: { start_offset: number; end_offset: number; high_watermark: number }[] },
  partitions: number,
): number {
  expect(described.lag).toBe(0);
  expect(described.partitions).toHaveLength(partitions);
  let records = 0;
  for (const p of described.partitions) {
    expect(p.start_offset).toBe(p.high_watermark);
    expect(p.end_offset).toBe(p.high_watermark);
    records += p.high_watermark;
  }
  return records;
}
