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
