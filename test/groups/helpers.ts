import { testApp } from '../support/test-app.js';
import type { Storage } from '../../src/compose.js';

/** A clock the test moves by hand, so session expiry happens exactly when the test says. */
export function manualClock(start = Date.UTC(2024, 0, 1)) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
  };
}

export type Partition = { topic_name: string; partition_id: number };
export const keys = (ps: Partition[]) => ps.map((p) => `${p.topic_name}-${p.partition_id}`).sort();

/** The app over memory storage (or a given one) with a manual clock, plus group-call shorthands. */
export function groupApp(options: { storage?: Storage; clock?: ReturnType<typeof manualClock> } = {}) {
  const clock = options.clock ?? manualClock();
  const t = testApp({ clock, ...(options.storage ? { storage: options.storage } : {}) });
  const heartbeat = (group: string, body: Record<string, unknown>) =>
    t.call('POST', `consumer-groups/${group}/consumers:heartbeat`, body);
  const join = async (group: string, topics: string[], extra: Record<string, unknown> = {}) => {
    const res = await heartbeat(group, {
      member_id: '',
      member_epoch: 0,
      subscribed_topic_names: topics,
      'session.timeout.ms': 10_000,
      ...extra,
    });
    if (res.status !== 200) throw new Error(`join failed: ${JSON.stringify(res.body)}`);
    return res.body as {
      member_id: string;
      member_epoch: number;
      assignment: Partition[];
      pending_assignment: Partition[];
      state: string;
    };
  };
  const createTopic = async (name: string, partitions: number) => {
    const res = await t.call('POST', 'topics', { topic_name: name, partitions_count: partitions });
    if (res.status !== 201) throw new Error(`create topic failed: ${JSON.stringify(res.body)}`);
  };
  const produce = async (topic: string, partition: number, count: number, timestamp?: string) => {
    for (let i = 0; i < count; i++) {
      const res = await t.call('POST', `topics/${topic}/records`, {
        partition_id: partition,
        value: { type: 'STRING', data: `v${i}` },
        ...(timestamp ? { timestamp } : {}),
      });
      if (res.status !== 200) throw new Error(`produce failed: ${JSON.stringify(res.body)}`);
    }
  };
  const describe = async (group: string) => (await t.call('GET', `consumer-groups/${group}`)).body;
  return { ...t, clock, heartbeat, join, createTopic, produce, describe };
}
