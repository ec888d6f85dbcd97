/** The static-membership rules of the classic group item (classic-group.ts), as pure functions. */
import { describe, expect, it } from 'vitest';
import {
  checkGeneration,
  checkStaticMember,
  type ClassicGroup,
  type ClassicMember,
  newClassicGroup,
  replaceStaticMember,
  restartStaticMember,
  staticMemberId,
} from '../../src/groups/classic-group.js';
import { isKafkaError } from '../../src/wire/errors.js';

const member = (
  memberId: string,
  groupInstanceId: string | null,
  extra: Partial<ClassicMember> = {},
): ClassicMember => ({
  memberId,
  groupInstanceId,
  clientId: 'c',
  clientHost: '/h',
  sessionTimeoutMs: 6000,
  rebalanceTimeoutMs: 6000,
  protocolType: 'consumer',
  protocols: [{ name: 'range', metadata: '' }],
  lastHeartbeat: 0,
  rejoined: false,
  joinGeneration: 3,
  assignment: 'YXNzaWdubWVudA==',
  ...extra,
});

const stable = (): ClassicGroup => ({
  ...newClassicGroup('g'),
  state: 'Stable',
  generationId: 3,
  protocolType: 'consumer',
  protocolName: 'range',
  leaderId: 'old',
  members: { old: member('old', 'i1'), dyn: member('dyn', null) },
});

const fails = (f: () => unknown, name: Parameters<typeof isKafkaError>[1]) =>
  expect(f).toThrow(expect.toSatisfy((e) => isKafkaError(e, name)));

describe('static members', () => {
  it('maps an instance id to its member id', () => {
    expect(staticMemberId(stable(), 'i1')).toBe('old');
    expect(staticMemberId(stable(), 'i2')).toBeUndefined();
    expect(staticMemberId(undefined, 'i1')).toBeUndefined();
  });

  it('checks a request naming an instance: its holder passes, another id is fenced, an unknown instance unknown', () => {
    checkStaticMember(stable(), 'old', 'i1');
    checkStaticMember(stable(), 'anyone', null); // no instance named: not checked here
    fails(() => checkStaticMember(stable(), 'zombie', 'i1'), 'FENCED_INSTANCE_ID');
    fails(() => checkStaticMember(stable(), 'old', 'i2'), 'UNKNOWN_MEMBER_ID');
    fails(() => checkGeneration(stable(), 'zombie', 3, 'i1'), 'FENCED_INSTANCE_ID');
    fails(() => checkGeneration(stable(), 'old', 2, 'i1'), 'ILLEGAL_GENERATION');
    expect(checkGeneration(stable(), 'old', 3, 'i1').memberId).toBe('old');
  });

  it('a replacement keeps the generation, assignment and leadership, and drops the old id', () => {
    const g = replaceStaticMember(stable(), 'old', member('new', 'i1', { joinGeneration: -1, assignment: '' }));
    expect(Object.keys(g.members).sort()).toEqual(['dyn', 'new']);
    expect(g.members.new).toMatchObject({ joinGeneration: 3, assignment: 'YXNzaWdubWVudA==', groupInstanceId: 'i1' });
    expect(g.leaderId).toBe('new');
    expect(staticMemberId(g, 'i1')).toBe('new');
    fails(() => checkStaticMember(g, 'old', 'i1'), 'FENCED_INSTANCE_ID');
    // Not the leader: the leader stays.
    const h = replaceStaticMember({ ...stable(), leaderId: 'dyn' }, 'old', member('new', 'i1'));
    expect(h.leaderId).toBe('dyn');
    // An old id that is gone already changes nothing.
    expect(replaceStaticMember(stable(), 'ghost', member('new', 'i1'))).toEqual(stable());
  });

  it('a restart in a Stable group with the same protocol is no rebalance; otherwise the group rebalances', () => {
    const quiet = restartStaticMember(stable(), 'old', member('new', 'i1', { lastHeartbeat: 50 }), 50);
    expect(quiet.rebalance).toBe(false);
    expect(quiet.group).toMatchObject({ state: 'Stable', generationId: 3, leaderId: 'new' });

    // The restarted member supports only another protocol: the group's choice would change.
    const other = [{ name: 'roundrobin', metadata: '' }];
    const changed = restartStaticMember(
      {
        ...stable(),
        members: { old: member('old', 'i1', { protocols: [...other, { name: 'range', metadata: '' }] }) },
      },
      'old',
      member('new', 'i1', { protocols: other }),
      50,
    );
    expect(changed.rebalance).toBe(true);
    // It was the only member and has rejoined: the barrier closes at once, a new generation opens.
    expect(changed.group).toMatchObject({ state: 'CompletingRebalance', generationId: 4, protocolName: 'roundrobin' });

    // Awaiting the leader's assignment: a rebalance; the other member must rejoin first.
    const completing = restartStaticMember(
      { ...stable(), state: 'CompletingRebalance' },
      'old',
      member('new', 'i1'),
      50,
    );
    expect(completing.rebalance).toBe(true);
    expect(completing.group.state).toBe('PreparingRebalance');
    expect(completing.group.members.new!.rejoined).toBe(true);
    expect(completing.group.members.dyn!.rejoined).toBe(false);
  });
});
