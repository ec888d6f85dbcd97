import { KafkaError } from '../wire/errors.js';
import { assignmentKeys, assignmentOf, parseTpKey, tpKey, type Assignment } from './assignment.js';

/**
 * Server-side partition assignors (KIP-848 moves assignment from the group leader to the
 * coordinator). Each is a pure function of the members' subscriptions, the subscribed topics'
 * partition counts and, for sticky, the previous target assignment. Members are ordered by member id,
 * as Kafka's assignors order them, so the same input always gives the same assignment.
 */
export type AssignorName = 'range' | 'roundrobin' | 'sticky';
export const ASSIGNOR_NAMES: readonly AssignorName[] = ['range', 'roundrobin', 'sticky'];

/**
 * The assignor of a group whose members name none: Kafka's `group.consumer.assignors` lists
 * `uniform` first (then `range`), and the first is the default; `uniform` is our `sticky`. It also
 * moves the fewest partitions on a join (a few members' targets change, where range moves every
 * boundary and so rewrites nearly every member's item: docs/performance.md, "Scale simulation").
 */
export const DEFAULT_ASSIGNOR: AssignorName = 'sticky';

export interface AssignorMember {
  memberId: string;
  topics: readonly string[];
}

export interface AssignmentSpec {
  members: readonly AssignorMember[];
  /** Partition counts of the subscribed topics that exist. */
  partitionCounts: Readonly<Record<string, number>>;
  /** The previous target assignment by member id (what sticky keeps where it can). */
  previous: Readonly<Record<string, Assignment>>;
}

/** A target assignment by member id; every member appears, possibly with an empty assignment. */
export type TargetAssignment = Record<string, Assignment>;
export type Assignor = (spec: AssignmentSpec) => TargetAssignment;

/** The names clients use for the assignors (config values and Java class names) mapped to ours. */
const ALIASES: Record<string, AssignorName> = {
  range: 'range',
  roundrobin: 'roundrobin',
  'round-robin': 'roundrobin',
  sticky: 'sticky',
  'cooperative-sticky': 'sticky',
  uniform: 'sticky',
  'org.apache.kafka.clients.consumer.rangeassignor': 'range',
  'org.apache.kafka.clients.consumer.roundrobinassignor': 'roundrobin',
  'org.apache.kafka.clients.consumer.stickyassignor': 'sticky',
  'org.apache.kafka.clients.consumer.cooperativestickyassignor': 'sticky',
};

export function parseAssignorName(name: string): AssignorName {
  const a = ALIASES[name.trim().toLowerCase()];
  if (!a)
    throw new KafkaError(
      'UNSUPPORTED_ASSIGNOR',
      `Unsupported assignor ${JSON.stringify(name)}: use range, roundrobin or sticky`,
    );
  return a;
}

const sortedMembers = (spec: AssignmentSpec) =>
  [...spec.members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));

/** Topics some member subscribes to that exist, sorted. */
const subscribedTopics = (spec: AssignmentSpec) =>
  [...new Set(spec.members.flatMap((m) => m.topics))].filter((t) => (spec.partitionCounts[t] ?? 0) > 0).sort();

function collect(members: readonly AssignorMember[], owner: Map<string, string>): TargetAssignment {
  const keys = new Map<string, string[]>(members.map((m) => [m.memberId, []]));
  for (const [key, member] of owner) keys.get(member)!.push(key);
  return Object.fromEntries([...keys].map(([m, k]) => [m, assignmentOf(k)]));
}

/**
 * Kafka's RangeAssignor: per topic, the subscribed members in order take consecutive ranges; the
 * first `partitions % members` take one extra (10 partitions over 3 members: 4, 3, 3).
 */
export const rangeAssignor: Assignor = (spec) => {
  const members = sortedMembers(spec);
  const owner = new Map<string, string>();
  for (const topic of subscribedTopics(spec)) {
    const consumers = members.filter((m) => m.topics.includes(topic));
    const count = spec.partitionCounts[topic]!;
    const quota = Math.floor(count / consumers.length);
    const extra = count % consumers.length;
    consumers.forEach((m, i) => {
      const start = quota * i + Math.min(i, extra);
      const length = quota + (i < extra ? 1 : 0);
      for (let p = start; p < start + length; p++) owner.set(tpKey(topic, p), m.memberId);
    });
  }
  return collect(members, owner);
};

/**
 * Kafka's RoundRobinAssignor: all partitions in (topic, partition) order are dealt to the members
 * in a circle, skipping members not subscribed to the partition's topic.
 */
export const roundRobinAssignor: Assignor = (spec) => {
  const members = sortedMembers(spec);
  const owner = new Map<string, string>();
  let next = 0;
  for (const topic of subscribedTopics(spec)) {
    for (let p = 0; p < spec.partitionCounts[topic]!; p++) {
      while (!members[next % members.length]!.topics.includes(topic)) next++;
      owner.set(tpKey(topic, p), members[next % members.length]!.memberId);
      next++;
    }
  }
  return collect(members, owner);
};

/**
 * A sticky assignor (the goal of Kafka's StickyAssignor and KIP-848's uniform assignor): as balanced
 * as the subscriptions allow, moving as few partitions as possible from their previous owners.
 *  1. Every member keeps the partitions it had in the previous target that still exist and that it
 *     still subscribes to.
 *  2. Each partition nobody kept goes to the least loaded member subscribed to its topic.
 *  3. While some member A has a partition whose topic a member B subscribes to and A holds at least
 *     two more partitions than B, one moves from A to B (newly placed partitions first, so previous
 *     owners keep theirs). Each move lowers the sum of squared counts, so this ends; with identical
 *     subscriptions it ends with counts that differ by at most one.
 */
export const stickyAssignor: Assignor = (spec) => {
  const members = sortedMembers(spec);
  const owner = new Map<string, string>();
  const held = new Map<string, string[]>(members.map((m) => [m.memberId, []]));
  const kept = new Set<string>();
  const take = (key: string, memberId: string) => {
    owner.set(key, memberId);
    held.get(memberId)!.push(key);
  };
  const exists = (key: string) => {
    const { topic, partition } = parseTpKey(key);
    return partition < (spec.partitionCounts[topic] ?? 0);
  };

  for (const m of members) {
    for (const key of assignmentKeys(spec.previous[m.memberId] ?? {})) {
      if (!owner.has(key) && exists(key) && m.topics.includes(parseTpKey(key).topic)) {
        take(key, m.memberId);
        kept.add(key);
      }
    }
  }

  const eligible = new Map<string, AssignorMember[]>();
  for (const topic of subscribedTopics(spec))
    eligible.set(
      topic,
      members.filter((m) => m.topics.includes(topic)),
    );
  const leastLoaded = (topic: string, except?: string) => {
    let best: AssignorMember | undefined;
    for (const m of eligible.get(topic) ?? []) {
      if (m.memberId !== except && (!best || held.get(m.memberId)!.length < held.get(best.memberId)!.length)) best = m;
    }
    return best;
  };

  for (const topic of subscribedTopics(spec)) {
    for (let p = 0; p < spec.partitionCounts[topic]!; p++) {
      const key = tpKey(topic, p);
      if (!owner.has(key)) take(key, leastLoaded(topic)!.memberId);
    }
  }

  for (let moved = true; moved; ) {
    moved = false;
    const byLoad = [...members].sort((a, b) => held.get(b.memberId)!.length - held.get(a.memberId)!.length);
    for (const a of byLoad) {
      const mine = held.get(a.memberId)!;
      // Newly placed partitions move first, then the most recently kept ones.
      const candidates = [...mine.filter((k) => !kept.has(k)).reverse(), ...mine.filter((k) => kept.has(k)).reverse()];
      for (const key of candidates) {
        const b = leastLoaded(parseTpKey(key).topic, a.memberId);
        if (b && mine.length > held.get(b.memberId)!.length + 1) {
          mine.splice(mine.indexOf(key), 1);
          take(key, b.memberId);
          moved = true;
          break;
        }
      }
      if (moved) break;
    }
  }
  return collect(members, owner);
};

export const ASSIGNORS: Record<AssignorName, Assignor> = {
  range: rangeAssignor,
  roundrobin: roundRobinAssignor,
  sticky: stickyAssignor,
};
