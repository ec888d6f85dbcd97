import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assignmentKeys, countOf, type Assignment } from '../../src/groups/assignment.js';
import {
  ASSIGNORS,
  parseAssignorName,
  rangeAssignor,
  roundRobinAssignor,
  stickyAssignor,
  type AssignmentSpec,
} from '../../src/groups/assignors.js';

const counts = (t: Record<string, Assignment>) =>
  Object.keys(t)
    .sort()
    .map((m) => countOf(t[m]!));
const members = (n: number, topics: string[]) => Array.from({ length: n }, (_, i) => ({ memberId: `m${i}`, topics }));

describe('assignors', () => {
  it('range: 10 partitions over 3 consumers gives 4/3/3 in member order, consecutive ranges', () => {
    const t = rangeAssignor({ members: members(3, ['t']), partitionCounts: { t: 10 }, previous: {} });
    expect(t).toEqual({ m0: { t: [0, 1, 2, 3] }, m1: { t: [4, 5, 6] }, m2: { t: [7, 8, 9] } });
  });

  it('range works per topic, so two topics of 3 over 2 members give the first member 2 of each', () => {
    const t = rangeAssignor({ members: members(2, ['a', 'b']), partitionCounts: { a: 3, b: 3 }, previous: {} });
    expect(t).toEqual({ m0: { a: [0, 1], b: [0, 1] }, m1: { a: [2], b: [2] } });
  });

  it('roundrobin deals all partitions in (topic, partition) order, skipping members not subscribed', () => {
    const t = roundRobinAssignor({ members: members(3, ['a', 'b']), partitionCounts: { a: 3, b: 3 }, previous: {} });
    expect(t).toEqual({ m0: { a: [0], b: [0] }, m1: { a: [1], b: [1] }, m2: { a: [2], b: [2] } });
    const mixed = roundRobinAssignor({
      members: [
        { memberId: 'x', topics: ['a'] },
        { memberId: 'y', topics: ['a', 'b'] },
      ],
      partitionCounts: { a: 2, b: 2 },
      previous: {},
    });
    expect(mixed).toEqual({ x: { a: [0] }, y: { a: [1], b: [0, 1] } });
  });

  it('sticky keeps prior owners where balance allows and moves the minimum when a member joins', () => {
    const previous = { m0: { t: [0, 1, 2, 3] }, m1: { t: [4, 5, 6, 7] }, m2: { t: [8, 9, 10, 11] } };
    const t = stickyAssignor({ members: members(4, ['t']), partitionCounts: { t: 12 }, previous });
    expect(counts(t)).toEqual([3, 3, 3, 3]);
    let kept = 0;
    for (const m of ['m0', 'm1', 'm2'])
      for (const k of assignmentKeys(t[m]!)) if (assignmentKeys(previous[m as 'm0']).has(k)) kept++;
    expect(kept).toBe(9); // only 3 partitions moved, all to the new member
    // A member leaving: its partitions spread, nobody else loses any.
    const after = stickyAssignor({ members: members(2, ['t']), partitionCounts: { t: 12 }, previous });
    expect(counts(after)).toEqual([6, 6]);
    for (const m of ['m0', 'm1'] as const)
      for (const k of assignmentKeys(previous[m])) expect(assignmentKeys(after[m]!).has(k)).toBe(true);
  });

  it('parses the names clients use and rejects others with UNSUPPORTED_ASSIGNOR', () => {
    expect(parseAssignorName('org.apache.kafka.clients.consumer.RangeAssignor')).toBe('range');
    expect(parseAssignorName('cooperative-sticky')).toBe('sticky');
    expect(parseAssignorName('RoundRobin')).toBe('roundrobin');
    expect(() => parseAssignorName('magic')).toThrow(expect.objectContaining({ errorName: 'UNSUPPORTED_ASSIGNOR' }));
  });

  const specArb = fc
    .record({
      topics: fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 0, max: 12 })),
      members: fc.uniqueArray(
        fc.record({
          memberId: fc.string({ minLength: 1, maxLength: 4 }),
          topics: fc.subarray(['a', 'b', 'c', 'missing']),
        }),
        {
          minLength: 1,
          maxLength: 6,
          selector: (m) => m.memberId,
        },
      ),
      previousSeed: fc.integer(),
    })
    .map(({ topics, members, previousSeed }): AssignmentSpec => {
      // A previous assignment that may be stale: partitions of any topic dealt to any member id.
      const previous: Record<string, Assignment> = {};
      let s = previousSeed;
      for (const [t, n] of Object.entries(topics)) {
        for (let p = 0; p < n + 2; p++) {
          s = (s * 1103515245 + 12345) & 0x7fffffff;
          const m = members[s % members.length]!.memberId;
          (previous[m] ??= {})[t] = [...(previous[m]![t] ?? []), p];
        }
      }
      return { members, partitionCounts: topics, previous };
    });

  for (const [name, assignor] of Object.entries(ASSIGNORS)) {
    it(`${name}: every partition of a subscribed topic goes to exactly one subscribed member`, () => {
      fc.assert(
        fc.property(specArb, (spec) => {
          const t = assignor(spec);
          expect(Object.keys(t).sort()).toEqual(spec.members.map((m) => m.memberId).sort());
          const seen = new Set<string>();
          for (const m of spec.members) {
            for (const k of assignmentKeys(t[m.memberId]!)) {
              expect(seen.has(k)).toBe(false);
              seen.add(k);
              expect(m.topics).toContain(k.split('#')[0]);
            }
          }
          const expected = new Set<string>();
          for (const [topic, n] of Object.entries(spec.partitionCounts)) {
            if (spec.members.some((m) => m.topics.includes(topic)))
              for (let p = 0; p < n; p++) expected.add(`${topic}#${p}`);
          }
          expect([...seen].sort()).toEqual([...expected].sort());
        }),
        { numRuns: 200 },
      );
    });
  }

  it('sticky with identical subscriptions is balanced within one partition', () => {
    fc.assert(
      fc.property(specArb, (spec) => {
        const same = { ...spec, members: spec.members.map((m) => ({ ...m, topics: ['a', 'b', 'c'] })) };
        const c = counts(stickyAssignor(same));
        expect(Math.max(...c) - Math.min(...c)).toBeLessThanOrEqual(1);
      }),
      { numRuns: 200 },
    );
  });
});
