/**
 * A classic group (classic-group.ts) as the HTTP view shows groups: its state and members, with
 * each member's subscription and assignment read from Kafka's consumer protocol bytes (the client
 * assigns in the classic protocol, so the server only has what the leader sent in SyncGroup).
 * Without this the view read the group's KIP-848 item, which a classic group leaves empty: Empty,
 * no members, while Kafka clients were consuming.
 */
import type { Assignment } from './assignment.js';
import type { ClassicGroup } from './classic-group.js';
import type { GroupRecord, MemberRecord } from './group-state.js';

/** A reader over Kafka's consumer protocol encoding (big-endian, int16-length strings); undefined past the end. */
class Reader {
  private at = 0;
  constructor(private readonly b: Buffer) {}
  int16(): number | undefined {
    if (this.at + 2 > this.b.length) return undefined;
    const v = this.b.readInt16BE(this.at);
    this.at += 2;
    return v;
  }
  int32(): number | undefined {
    if (this.at + 4 > this.b.length) return undefined;
    const v = this.b.readInt32BE(this.at);
    this.at += 4;
    return v;
  }
  string(): string | undefined {
    const n = this.int16();
    if (n === undefined || n < 0 || this.at + n > this.b.length) return undefined;
    const s = this.b.toString('utf8', this.at, this.at + n);
    this.at += n;
    return s;
  }
}

/** ConsumerProtocolSubscription's topics (any version: they lead every one); [] when unreadable. */
export function subscribedTopicsOf(metadata: Buffer): string[] {
  const r = new Reader(metadata);
  if (r.int16() === undefined) return [];
  const n = r.int32();
  if (n === undefined || n < 0 || n > 100_000) return [];
  const topics: string[] = [];
  for (let i = 0; i < n; i++) {
    const t = r.string();
    if (t === undefined) return [];
    topics.push(t);
  }
  return topics.sort();
}

/** ConsumerProtocolAssignment's partitions (any version); {} when unreadable. */
export function assignedPartitionsOf(assignment: Buffer): Assignment {
  const r = new Reader(assignment);
  if (r.int16() === undefined) return {};
  const n = r.int32();
  if (n === undefined || n < 0 || n > 100_000) return {};
  const out: Assignment = {};
  for (let i = 0; i < n; i++) {
    const topic = r.string();
    const count = r.int32();
    if (topic === undefined || count === undefined || count < 0) return {};
    const ps: number[] = [];
    for (let j = 0; j < count; j++) {
      const p = r.int32();
      if (p === undefined) return {};
      ps.push(p);
    }
    if (ps.length > 0) out[topic] = [...new Set([...(out[topic] ?? []), ...ps])].sort((a, b) => a - b);
  }
  return out;
}

/** The view of a classic group; `assignor` is the protocol the members chose (Kafka's names). */
export function classicGroupView(g: ClassicGroup): { group: GroupRecord; assignor: string } {
  const members: Record<string, MemberRecord> = {};
  for (const m of Object.values(g.members)) {
    const chosen = m.protocols.find((p) => p.name === g.protocolName) ?? m.protocols[0];
    members[m.memberId] = {
      memberId: m.memberId,
      clientId: m.clientId,
      memberEpoch: m.joinGeneration,
      previousMemberEpoch: -1,
      subscribedTopics: chosen ? subscribedTopicsOf(Buffer.from(chosen.metadata, 'base64')) : [],
      sessionTimeoutMs: m.sessionTimeoutMs,
      rebalanceTimeoutMs: m.rebalanceTimeoutMs,
      lastHeartbeat: m.lastHeartbeat,
      joinedAt: m.lastHeartbeat,
      // Only the current generation's assignment is the member's (a stale one was revoked by the rebalance).
      assigned:
        m.joinGeneration === g.generationId && g.state === 'Stable'
          ? assignedPartitionsOf(Buffer.from(m.assignment, 'base64'))
          : {},
      revoking: {},
    };
  }
  return {
    group: {
      groupId: g.groupId,
      createdAt: 0,
      protocolType: 'consumer',
      groupEpoch: g.generationId,
      assignmentEpoch: g.generationId,
      assignor: 'range',
      topicPartitions: {},
      members,
      target: {},
      state: g.state,
    },
    assignor: g.protocolName ?? '',
  };
}
