/**
 * Assignments as plain data (topic -> ascending partition ids), the shape the group item stores, and
 * the set operations reconciliation needs. Topic names never contain '#' (Kafka's name rules), so
 * `topic#partition` is an unambiguous key.
 */
export type Assignment = Record<string, number[]>;

export interface TopicPartition {
  topic: string;
  partition: number;
}

export const tpKey = (topic: string, partition: number) => `${topic}#${partition}`;

export function parseTpKey(key: string): TopicPartition {
  const at = key.lastIndexOf('#');
  return { topic: key.slice(0, at), partition: Number(key.slice(at + 1)) };
}

export function assignmentKeys(a: Assignment): Set<string> {
  const out = new Set<string>();
  for (const [topic, parts] of Object.entries(a)) for (const p of parts) out.add(tpKey(topic, p));
  return out;
}

/** Builds an assignment in canonical form: topics sorted, partitions ascending and unique. */
export function assignmentOf(keys: Iterable<string | TopicPartition>): Assignment {
  const byTopic = new Map<string, Set<number>>();
  for (const k of keys) {
    const { topic, partition } = typeof k === 'string' ? parseTpKey(k) : k;
    let s = byTopic.get(topic);
    if (!s) byTopic.set(topic, (s = new Set()));
    s.add(partition);
  }
  const out: Assignment = {};
  for (const topic of [...byTopic.keys()].sort()) out[topic] = [...byTopic.get(topic)!].sort((x, y) => x - y);
  return out;
}

export const toPartitions = (a: Assignment): TopicPartition[] =>
  Object.entries(a).flatMap(([topic, parts]) => parts.map((partition) => ({ topic, partition })));

export const countOf = (a: Assignment): number => Object.values(a).reduce((n, p) => n + p.length, 0);
export const isEmptyAssignment = (a: Assignment): boolean => countOf(a) === 0;

export function minus(a: Assignment, b: Assignment | Set<string>): Assignment {
  const drop = b instanceof Set ? b : assignmentKeys(b);
  return assignmentOf([...assignmentKeys(a)].filter((k) => !drop.has(k)));
}

export function intersect(a: Assignment, b: Assignment): Assignment {
  const keep = assignmentKeys(b);
  return assignmentOf([...assignmentKeys(a)].filter((k) => keep.has(k)));
}

export const union = (...all: Assignment[]): Assignment => assignmentOf(all.flatMap((a) => [...assignmentKeys(a)]));

export function sameAssignment(a: Assignment, b: Assignment): boolean {
  const x = assignmentKeys(a);
  const y = assignmentKeys(b);
  return x.size === y.size && [...x].every((k) => y.has(k));
}

export const owns = (a: Assignment, topic: string, partition: number): boolean =>
  a[topic]?.includes(partition) ?? false;
