import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { groupApp, keys, type Partition } from './helpers.js';

type Action =
  | { kind: 'join'; topics: string[]; session: number; rebalance: number }
  | { kind: 'beat'; who: number; explicit: boolean }
  | { kind: 'leave'; who: number }
  | { kind: 'silence'; who: number }
  | { kind: 'resubscribe'; who: number; topics: string[] }
  | { kind: 'advance'; ms: number }
  | { kind: 'tick' };

const topicsArb = fc.subarray(['a', 'b'], { minLength: 1 });
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('join' as const),
      topics: topicsArb,
      session: fc.constantFrom(6_000, 10_000, 20_000),
      rebalance: fc.constantFrom(7_000, 300_000),
    }),
  },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('beat' as const), who: fc.nat(), explicit: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('leave' as const), who: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('silence' as const), who: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resubscribe' as const), who: fc.nat(), topics: topicsArb }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 8_000 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const) }) },
);

interface SimMember {
  id: string;
  epoch: number;
  assignment: Partition[];
  topics: string[];
  silent: boolean;
  gone: boolean;
}

describe('consumer group invariants under random joins, leaves, silences and expiries', () => {
  it('never lets two members hold a partition, and a Stable group covers every subscribed partition', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArb, { minLength: 5, maxLength: 40 }), async (actions) => {
        const g = groupApp();
        await g.createTopic('a', 5);
        await g.createTopic('b', 3);
        const sims: SimMember[] = [];
        const live = () => sims.filter((m) => !m.gone && !m.silent);

        const check = async () => {
          const d = await g.describe('grp');
          if (d.error) return; // not created yet
          const held = d.members.flatMap((m: { assignment: Partition[]; revoking: Partition[] }) => [
            ...keys(m.assignment),
            ...keys(m.revoking),
          ]);
          expect(new Set(held).size, `a partition has two owners: ${JSON.stringify(d.members)}`).toBe(held.length);
          if (d.state === 'STABLE') {
            const subscribed = new Set<string>(
              d.members.flatMap((m: { subscribed_topic_names: string[] }) => m.subscribed_topic_names),
            );
            const expected = [...subscribed].flatMap((t) =>
              Array.from({ length: t === 'a' ? 5 : 3 }, (_, p) => `${t}-${p}`),
            );
            expect(held.sort()).toEqual(expected.sort());
          }
          // What each member was last told it may consume is what the coordinator says it holds.
          for (const m of d.members as { consumer_id: string; assignment: Partition[] }[]) {
            const sim = sims.find((s) => s.id === m.consumer_id)!;
            expect(keys(sim.assignment)).toEqual(keys(m.assignment));
          }
        };

        const beat = async (m: SimMember, explicit: boolean, topics?: string[]) => {
          const res = await g.heartbeat('grp', {
            member_id: m.id,
            member_epoch: m.epoch,
            ...(explicit ? { owned_partitions: m.assignment } : {}),
            ...(topics ? { subscribed_topic_names: topics } : {}),
          });
          if (res.status === 404) {
            m.gone = true; // expired
            return;
          }
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          m.epoch = res.body.member_epoch;
          m.assignment = res.body.assignment;
          if (topics) m.topics = topics;
        };

        for (const action of actions) {
          const pick = (who: number) => (live().length > 0 ? live()[who % live().length] : undefined);
          switch (action.kind) {
            case 'join': {
              const a = await g.join('grp', action.topics, {
                'session.timeout.ms': action.session,
                'max.poll.interval.ms': action.rebalance,
              });
              sims.push({
                id: a.member_id,
                epoch: a.member_epoch,
                assignment: a.assignment,
                topics: action.topics,
                silent: false,
                gone: false,
              });
              break;
            }
            case 'beat': {
              const m = pick(action.who);
              if (m) await beat(m, action.explicit);
              break;
            }
            case 'resubscribe': {
              const m = pick(action.who);
              if (m) await beat(m, false, action.topics);
              break;
            }
            case 'leave': {
              const m = pick(action.who);
              if (m) {
                const res = await g.call('DELETE', `consumer-groups/grp/consumers/${m.id}`);
                expect([204, 404]).toContain(res.status);
                m.gone = true;
              }
              break;
            }
            case 'silence': {
              const m = pick(action.who);
              if (m) m.silent = true;
              break;
            }
            case 'advance':
              g.clock.advance(action.ms);
              break;
            case 'tick':
              await g.services.groups.coordinator.expireSessions();
              break;
          }
          await check();
        }

        // Quiesce: live members keep heartbeating while silent ones time out; the group must settle.
        if (live().length === 0) return;
        let state = '';
        for (let round = 0; round < 40 && state !== 'STABLE'; round++) {
          g.clock.advance(1_000);
          if (round % 3 === 0) await g.services.groups.coordinator.expireSessions();
          for (const m of live()) await beat(m, round % 2 === 0);
          await check();
          state = (await g.describe('grp')).state;
        }
        if (live().length > 0) expect(state).toBe('STABLE');
      }),
      { numRuns: 40 },
    );
  });
});
