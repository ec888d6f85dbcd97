/**
 * Static membership (KIP-345) of the classic group protocol over the listener: a member restarted
 * with the same group.instance.id takes its old member's place without a rebalance, and the old
 * member id is fenced (FENCED_INSTANCE_ID). librdkafka (python3-confluent-kafka; kafkajs has no
 * group.instance.id) runs real static members, skipped, saying so, where the package is missing;
 * bare connections check each API's answers.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as m from '../../src/kafka/protocol/messages/index.js';
import { ERRORS } from '../../src/wire/errors.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { RawClient } from './support/raw-client.js';

const PYTHON = '/usr/bin/python3';
const hasConfluentKafka = spawnSync(PYTHON, ['-c', 'import confluent_kafka']).status === 0;

let s: TestKafkaServer;
let c: RawClient;
beforeAll(async () => {
  s = await startKafkaServer();
  await s.services.topics.create({ name: 'static', partitionCount: 4, replicationFactor: 1 });
  c = await RawClient.open(s.broker);
});
afterAll(async () => {
  c?.close();
  await s?.close();
});

describe('static members over bare connections', () => {
  const joinAs = async (groupId: string, groupInstanceId: string, memberId = '') =>
    (
      await c.request(m.JoinGroup, 5, {
        groupId,
        sessionTimeoutMs: 10_000,
        rebalanceTimeoutMs: 10_000,
        memberId,
        groupInstanceId,
        protocolType: 'consumer',
        protocols: [{ name: 'range', metadata: Buffer.from([0, 0, 0, 0, 0, 0]) }],
      })
    ).body;
  const sync = async (groupId: string, generationId: number, memberId: string, groupInstanceId: string | null) =>
    (
      await c.request(m.SyncGroup, 3, {
        groupId,
        generationId,
        memberId,
        groupInstanceId,
        assignments: [{ memberId, assignment: Buffer.from('mine') }],
      })
    ).body;
  const heartbeat = async (groupId: string, generationId: number, memberId: string, groupInstanceId: string | null) =>
    (await c.request(m.Heartbeat, 3, { groupId, generationId, memberId, groupInstanceId })).body.errorCode;
  const commit = async (groupId: string, generation: number, memberId: string, groupInstanceId: string | null) =>
    (
      await c.request(m.OffsetCommit, 7, {
        groupId,
        generationIdOrMemberEpoch: generation,
        memberId,
        groupInstanceId,
        topics: [{ name: 'static', partitions: [{ partitionIndex: 0, committedOffset: 1, committedMetadata: null }] }],
      })
    ).body.topics[0].partitions[0].errorCode;

  it('JoinGroup, SyncGroup, Heartbeat, OffsetCommit and LeaveGroup fence the replaced member id', async () => {
    const first = await joinAs('raw-static', 'i1');
    expect(first.errorCode).toBe(0); // v5 with an instance id: no MEMBER_ID_REQUIRED round
    expect(first.memberId).not.toBe('');
    expect((await sync('raw-static', first.generationId, first.memberId, 'i1')).errorCode).toBe(0);

    const restarted = await joinAs('raw-static', 'i1');
    expect(restarted).toMatchObject({ errorCode: 0, generationId: first.generationId, leader: first.memberId });
    expect(restarted.memberId).not.toBe(first.memberId);
    const synced = await sync('raw-static', restarted.generationId, restarted.memberId, 'i1');
    expect(synced).toMatchObject({ errorCode: 0 });
    expect(Buffer.from(synced.assignment).toString()).toBe('mine'); // the old member's assignment
    expect(await heartbeat('raw-static', first.generationId, restarted.memberId, 'i1')).toBe(0);
    expect(await commit('raw-static', first.generationId, restarted.memberId, 'i1')).toBe(0);

    const FENCED = ERRORS.FENCED_INSTANCE_ID.code;
    expect(await heartbeat('raw-static', first.generationId, first.memberId, 'i1')).toBe(FENCED);
    expect((await sync('raw-static', first.generationId, first.memberId, 'i1')).errorCode).toBe(FENCED);
    expect(await commit('raw-static', first.generationId, first.memberId, 'i1')).toBe(FENCED);
    expect((await joinAs('raw-static', 'i1', first.memberId)).errorCode).toBe(FENCED);
    expect(await heartbeat('raw-static', first.generationId, first.memberId, null)).toBe(ERRORS.UNKNOWN_MEMBER_ID.code);

    const left = (
      await c.request(m.LeaveGroup, 3, {
        groupId: 'raw-static',
        members: [
          { memberId: first.memberId, groupInstanceId: 'i1' },
          { memberId: '', groupInstanceId: 'nobody' },
          { memberId: '', groupInstanceId: 'i1' },
        ],
      })
    ).body;
    expect(left.errorCode).toBe(0);
    expect(left.members).toEqual([
      { memberId: first.memberId, groupInstanceId: 'i1', errorCode: FENCED },
      { memberId: '', groupInstanceId: 'nobody', errorCode: ERRORS.UNKNOWN_MEMBER_ID.code },
      { memberId: '', groupInstanceId: 'i1', errorCode: 0 },
    ]);
    expect((await s.services.groups.classic.describe('raw-static'))!.members).toEqual({});
  });
});

/** A running librdkafka static member: its events so far, and a wait for the next matching one. */
class StaticMember {
  readonly events: { event: string; partitions?: number[]; error?: string }[] = [];
  private readonly child: ChildProcess;
  private buffered = '';

  constructor(group: string, instance: string) {
    this.child = spawn(PYTHON, [
      join(import.meta.dirname, 'support/librdkafka-static-member.py'),
      s.broker,
      'static',
      group,
      instance,
    ]);
    this.child.stdout!.on('data', (d: Buffer) => {
      this.buffered += d.toString();
      const lines = this.buffered.split('\n');
      this.buffered = lines.pop()!;
      for (const l of lines) if (l.trim()) this.events.push(JSON.parse(l));
    });
  }

  async waitFor(match: (e: StaticMember['events'][number]) => boolean, from = 0, timeoutMs = 30_000) {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.slice(from).find(match);
      if (found) return found;
      if (Date.now() > end) throw new Error(`no such event; saw ${JSON.stringify(this.events)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The partitions of its last assignment. */
  get assigned(): number[] {
    return this.events.filter((e) => e.event === 'assign').at(-1)?.partitions ?? [];
  }

  /** As a crash: no LeaveGroup (a static member sends none anyway), no close. */
  kill() {
    this.child.kill('SIGKILL');
  }
}

describe.skipIf(!hasConfluentKafka)(
  hasConfluentKafka
    ? 'librdkafka static members'
    : 'librdkafka static members: python3-confluent-kafka (Debian package) is not installed: skipped',
  () => {
    it('a member restarted with its group.instance.id gets its partitions back with no rebalance', async () => {
      const group = 'rd-static';
      const a = new StaticMember(group, 'a');
      const b = new StaticMember(group, 'b');
      const members: StaticMember[] = [a, b];
      try {
        // Settled: two partitions each, both committed with their instance ids (OffsetCommit v7).
        const deadline = Date.now() + 40_000;
        while (!(a.assigned.length === 2 && b.assigned.length === 2)) {
          if (Date.now() > deadline) throw new Error(`not settled: ${JSON.stringify([a.events, b.events])}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        const settled = (await s.services.groups.classic.describe(group))!;
        expect(settled.state).toBe('Stable');
        const idOf = (g: typeof settled, instance: string) =>
          Object.values(g.members).find((x) => x.groupInstanceId === instance)?.memberId;
        const oldB = idOf(settled, 'b')!;
        expect(oldB).toEqual(expect.any(String)); // librdkafka joined with its instance id
        expect(idOf(settled, 'a')).toEqual(expect.any(String));
        const bPartitions = b.assigned;
        await b.waitFor((e) => e.event === 'committed' && e.partitions!.length === 2);
        const aEvents = a.events.length;

        b.kill();
        const b2 = new StaticMember(group, 'b');
        members.push(b2);
        const back = await b2.waitFor((e) => e.event === 'assign');
        expect(back.partitions).toEqual(bPartitions);
        await b2.waitFor((e) => e.event === 'committed');
        const after = (await s.services.groups.classic.describe(group))!;
        expect(after).toMatchObject({ state: 'Stable', generationId: settled.generationId });
        expect(idOf(after, 'b')).toEqual(expect.any(String));
        expect(idOf(after, 'b')).not.toBe(oldB);
        expect(idOf(after, 'a')).toBe(idOf(settled, 'a'));
        // a heartbeats on (every 300 ms) through the restart and after: no rebalance reaches it.
        await new Promise((r) => setTimeout(r, 1500));
        expect(a.events.slice(aEvents).filter((e) => e.event !== 'committed')).toEqual([]);
        expect([...b2.events, ...a.events].filter((e) => e.event === 'error')).toEqual([]);

        // The old member id is fenced.
        const hb = (
          await c.request(m.Heartbeat, 3, {
            groupId: group,
            generationId: settled.generationId,
            memberId: oldB,
            groupInstanceId: 'b',
          })
        ).body;
        expect(hb.errorCode).toBe(ERRORS.FENCED_INSTANCE_ID.code);

        // b goes for good: an admin removes it by instance id, and a takes all four partitions.
        b2.kill();
        const left = (
          await c.request(m.LeaveGroup, 4, { groupId: group, members: [{ memberId: '', groupInstanceId: 'b' }] })
        ).body;
        expect(left.members[0].errorCode).toBe(0);
        await a.waitFor((e) => e.event === 'assign' && e.partitions!.length === 4, aEvents);
      } finally {
        for (const x of members) x.kill();
      }
    }, 90_000);
  },
);
