import type { Clock } from '../clock.js';
import { SHARE_MEMBER_PREFIX, shareGroupPk, shareMemberSk } from '../storage/key-layout.js';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore } from '../storage/ports.js';
import type { TopicRegistry } from '../topics/topics.js';
import { KafkaError, isKafkaError } from '../wire/errors.js';

/**
 * Membership of Kafka's share consumers (ShareGroupHeartbeat, KIP-932). HTTP receivers need none;
 * a KafkaShareConsumer joins, heartbeats and leaves, and learns which partitions to fetch from.
 *
 * One item per member (`share#{group}` / `smbr#{memberId}`), written only by that member's
 * heartbeats: no group item, so joins and heartbeats of different members never contend. A steady
 * heartbeat costs one read; it writes only when something changed or a third of the session
 * timeout passed since the last write (so the member stays alive). A member whose last write is
 * older than the session timeout is gone: readers ignore it, and the item carries the same expiry
 * for the store to delete it.
 *
 * Assignment: every member is assigned every partition of the topics it subscribes to. Kafka's
 * simple assignor spreads partitions over members, but a share group lets any member fetch from
 * any partition (records, not partitions, are what members hold), so this is correct as well, and
 * it needs no view of the other members: the assignment changes only with the member's own
 * subscription or its topics' partitions, and the member epoch moves when it does.
 */

/** Kafka's broker settings for share group membership (group.share.*). */
export interface ShareMemberLimits {
  /** group.share.session.timeout.ms: a member not heard from for this long is gone. */
  sessionTimeoutMs: number;
  /** group.share.heartbeat.interval.ms: what members are told to heartbeat at. */
  heartbeatIntervalMs: number;
  /** group.share.max.size: members per share group. */
  maxSize: number;
}

export const SHARE_MEMBER_DEFAULTS: ShareMemberLimits = {
  sessionTimeoutMs: 45_000,
  heartbeatIntervalMs: 5_000,
  maxSize: 200,
};

export interface AssignedTopic {
  topic: string;
  topicId: string;
  partitions: number[];
}

export interface ShareMember {
  memberId: string;
  memberEpoch: number;
  clientId: string;
  clientHost: string;
  rackId: string | null;
  subscribedTopics: string[];
  assignment: AssignedTopic[];
  /** When the member's last heartbeat was written (epoch ms). */
  lastSeen: number;
}

export interface ShareHeartbeat {
  memberId: string;
  /** 0 to join, -1 to leave, else the member's current epoch. */
  memberEpoch: number;
  rackId: string | null;
  /** Null: unchanged since the last heartbeat. */
  subscribedTopics: string[] | null;
  clientId: string;
  clientHost: string;
}

export interface ShareHeartbeatAnswer {
  memberId: string;
  memberEpoch: number;
  heartbeatIntervalMs: number;
  /** Undefined once the member left. */
  assignment?: AssignedTopic[];
}

export interface ShareMemberDeps {
  metadata: MetadataStore;
  clock: Clock;
  topics: TopicRegistry;
  limits?: Partial<ShareMemberLimits>;
  /** Lists the group in the share group registry (ShareGroups'), on a member's join. */
  register: (group: string) => Promise<void>;
}

export class ShareMembers {
  readonly limits: ShareMemberLimits;

  constructor(private readonly deps: ShareMemberDeps) {
    this.limits = { ...SHARE_MEMBER_DEFAULTS, ...deps.limits };
  }

  /**
   * One heartbeat, as Kafka's share group coordinator answers it: INVALID_REQUEST without a member
   * id (Kafka 4.1 consumers make their own) or without a subscription on joining, UNKNOWN_MEMBER_ID
   * for a member that is not (or no longer) in the group, FENCED_MEMBER_EPOCH for an epoch that is
   * not the member's, GROUP_MAX_SIZE_REACHED for a join past group.share.max.size.
   */
  async heartbeat(group: string, hb: ShareHeartbeat): Promise<ShareHeartbeatAnswer> {
    if (hb.memberId === '') throw new KafkaError('INVALID_REQUEST', 'MemberId can not be empty');
    if (hb.memberEpoch < -1) throw new KafkaError('INVALID_REQUEST', `MemberEpoch ${hb.memberEpoch} is invalid`);
    const { metadata, clock } = this.deps;
    const pk = shareGroupPk(group);
    const sk = shareMemberSk(hb.memberId);
    const interval = this.limits.heartbeatIntervalMs;
    if (hb.memberEpoch === -1) {
      // Leaving twice (a retry after a lost answer) is leaving.
      await metadata.delete(pk, sk);
      return { memberId: hb.memberId, memberEpoch: -1, heartbeatIntervalMs: 0 };
    }
    const item = await metadata.get<ShareMember>(pk, sk);
    const joining = hb.memberEpoch === 0 && !this.alive(item?.value);
    if (joining) {
      if (!hb.subscribedTopics?.length)
        throw new KafkaError('INVALID_REQUEST', 'SubscribedTopicNames must be set when joining');
      await this.admit(group, hb.memberId);
    }
    const { result } = await optimisticUpdate<ShareMember, ShareMember>({
      metadata,
      pk,
      sk,
      known: { item },
      decide: async (found) => {
        const now = clock.now();
        const current = this.alive(found?.value) ? found!.value : undefined;
        if (!current && hb.memberEpoch !== 0)
          throw new KafkaError('UNKNOWN_MEMBER_ID', `Member ${hb.memberId} is not in share group ${group}`);
        if (current && hb.memberEpoch !== 0 && hb.memberEpoch !== current.memberEpoch)
          throw new KafkaError(
            'FENCED_MEMBER_EPOCH',
            `Member ${hb.memberId} has epoch ${current.memberEpoch}, not ${hb.memberEpoch}`,
          );
        const subscribedTopics = hb.subscribedTopics ?? current?.subscribedTopics ?? [];
        const assignment = await this.assign(subscribedTopics);
        const changed = !current || JSON.stringify(current.assignment) !== JSON.stringify(assignment);
        const next: ShareMember = {
          memberId: hb.memberId,
          // A new member (or one back after it expired) starts past any epoch it may remember.
          memberEpoch: !current ? (found?.value.memberEpoch ?? 0) + 1 : current.memberEpoch + (changed ? 1 : 0),
          clientId: hb.clientId,
          clientHost: hb.clientHost,
          rackId: hb.rackId ?? current?.rackId ?? null,
          subscribedTopics,
          assignment,
          lastSeen: now,
        };
        const same =
          current &&
          !changed &&
          JSON.stringify({ ...current, lastSeen: 0 }) === JSON.stringify({ ...next, lastSeen: 0 }) &&
          now - current.lastSeen < this.limits.sessionTimeoutMs / 3;
        if (same) return { done: current };
        return {
          write: next,
          expiresAt: now + this.limits.sessionTimeoutMs,
          answer: (written) => written.value,
        };
      },
      // Our own write found after an ambiguous outcome: the same value, lastSeen included.
      recognise: (found, attempted) => (holdsWrite(found, attempted) ? found.value : undefined),
      giveUp: {
        errorName: 'COORDINATOR_NOT_AVAILABLE',
        message: `Share group ${group}: member ${hb.memberId} contended`,
      },
    });
    return {
      memberId: result.memberId,
      memberEpoch: result.memberEpoch,
      heartbeatIntervalMs: interval,
      assignment: result.assignment,
    };
  }

  /** The group's live members, in member id order. */
  async list(group: string): Promise<ShareMember[]> {
    const items = await this.deps.metadata.query<ShareMember>(shareGroupPk(group), { beginsWith: SHARE_MEMBER_PREFIX });
    return items.map((i) => i.value).filter((m) => this.alive(m));
  }

  private alive(m: ShareMember | undefined): m is ShareMember {
    return m !== undefined && this.deps.clock.now() - m.lastSeen < this.limits.sessionTimeoutMs;
  }

  /** A join: within group.share.max.size, and the group listed in the registry. */
  private async admit(group: string, memberId: string): Promise<void> {
    const others = (await this.list(group)).filter((m) => m.memberId !== memberId);
    if (others.length >= this.limits.maxSize)
      throw new KafkaError(
        'GROUP_MAX_SIZE_REACHED',
        `Share group ${group} has reached its maximum size of ${this.limits.maxSize} members`,
      );
    await this.deps.register(group);
  }

  /** Every partition of each subscribed topic that exists (from the topic cache). */
  private async assign(topics: readonly string[]): Promise<AssignedTopic[]> {
    const out: AssignedTopic[] = [];
    for (const name of [...new Set(topics)].sort()) {
      const topic = await this.deps.topics.get(name).catch((e: unknown) => {
        if (isKafkaError(e, 'UNKNOWN_TOPIC_OR_PARTITION')) return undefined;
        throw e;
      });
      if (topic)
        out.push({
          topic: name,
          topicId: topic.id,
          partitions: Array.from({ length: topic.partitionCount }, (_, p) => p),
        });
    }
    return out;
  }
}
