import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { KafkaError, isKafkaError } from '../wire/errors.js';
import type { IsolationLevel, PartitionLog } from '../log/partition-log.js';
import { lastStableOffset } from '../partition/partition-state.js';
import { requirePartition, type Topic, type TopicRegistry } from '../topics/topics.js';
import { optimisticUpdate } from '../storage/optimistic-update.js';
import { hasPosition, holdsCommit, type OffsetRecord } from './offset-record.js';
import type { MetadataStore } from '../storage/ports.js';
import { owns } from './assignment.js';
import type { GroupCoordinator } from './coordinator.js';
import { validateGroupId } from './group-id.js';
import { groupState, unknownMember, type GroupRecord } from './group-state.js';
import { groupPk, OFFSET_PREFIX, offsetSk } from '../storage/key-layout.js';
import {
  PACED_WRITE_BURST,
  PACED_WRITE_RATE,
  type Pace,
  pacer,
  realSleep,
  writeUnitsOf,
} from '../storage/write-pace.js';

export type { OffsetRecord } from './offset-record.js';

export interface OffsetCommitEntry {
  topic: string;
  partition: number;
  offset: number;
  metadata?: string;
}

export interface OffsetCommitRequest {
  /** Absent: an admin commit, allowed only while the group has no members. */
  memberId?: string;
  generation?: number;
  offsets: OffsetCommitEntry[];
  /**
   * What a commit at an epoch other than the member's is answered: ILLEGAL_GENERATION (the HTTP
   * API's answer, the default) or STALE_MEMBER_EPOCH (Kafka's OffsetCommit v9+ for a KIP-848 member).
   */
  staleEpoch?: 'ILLEGAL_GENERATION' | 'STALE_MEMBER_EPOCH';
}

/** auto.offset.reset: where a consumer starts when it has no valid committed offset. */
export type AutoOffsetReset = 'earliest' | 'latest' | 'none';

export interface Position {
  offset: number;
  /** 'committed' when the committed offset is valid, else 'reset' (by auto.offset.reset). */
  source: 'committed' | 'reset';
  committed?: OffsetRecord;
}

/** offset.metadata.max.bytes (Kafka's default). */
export const MAX_OFFSET_METADATA_BYTES = 4096;

export interface OffsetDeps {
  metadata: MetadataStore;
  clock: Clock;
  topics: TopicRegistry;
  log: PartitionLog;
  coordinator: GroupCoordinator;
  /** How a paced commit waits (default: real time; tests and benchmarks pass simulated time). */
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Committed offsets: one item per group and partition. A member's commit is conditional on the
 * group state it was validated against: the offset item is read before the group, and written
 * only over the version read, so a commit never lands after its member lost the partition (see
 * offset-fence.ts; Kafka's coordinator gets the same from its in-memory lock).
 *
 * A group's offsets share its DynamoDB partition key, which takes 1,000 write units a second: a
 * commit's writes are paced there (its first PACED_WRITE_BURST units at once, then
 * PACED_WRITE_RATE a second; storage/write-pace.ts), as an EndTxn's are. As in Kafka, a commit is
 * not atomic across partitions: each partition's offset is written on its own, and a commit that
 * fails part way leaves the offsets it wrote (the consumer commits them again; those the items
 * hold already are then read, not written: `holdsCommit`).
 */
export class GroupOffsets {
  constructor(private readonly deps: OffsetDeps) {}

  /** A commit that fails on any partition throws (the first error), the others written all the same. */
  async commit(groupId: string, req: OffsetCommitRequest): Promise<OffsetRecord[]> {
    return firstFailure(await this.commitEach(groupId, req));
  }

  /**
   * A commit with each partition's outcome its own, as Kafka's OffsetCommit answers them: what
   * fails the whole commit (a bad request, a member not in the group, a stale epoch) is thrown;
   * a partition whose write failed (a lost race too many times, a store error) is rejected in its
   * place, and the others hold the record written.
   */
  async commitEach(groupId: string, req: OffsetCommitRequest): Promise<PromiseSettledResult<OffsetRecord>[]> {
    validateGroupId(groupId);
    const topics = await this.resolveTopics(req.offsets.map((o) => o.topic));
    for (const o of req.offsets) {
      const t = topics.get(o.topic)!;
      requirePartition(t, o.partition);
      // Negative offsets are stored as they come, as Kafka stores them (see OffsetRecord.offset).
      if (!Number.isSafeInteger(o.offset))
        throw new KafkaError('INVALID_REQUEST', `Offset ${o.offset} for ${o.topic}-${o.partition} must be an integer`);
      if (Buffer.byteLength(o.metadata ?? '', 'utf8') > MAX_OFFSET_METADATA_BYTES) {
        throw new KafkaError(
          'OFFSET_METADATA_TOO_LARGE',
          `Offset metadata for ${o.topic}-${o.partition} exceeds ${MAX_OFFSET_METADATA_BYTES} bytes`,
        );
      }
    }
    const now = this.deps.clock.now();
    const commitId = randomUUID();
    const record = (o: OffsetCommitEntry, generation: number): OffsetRecord => ({
      topic: o.topic,
      partition: o.partition,
      topicId: topics.get(o.topic)!.id,
      offset: o.offset,
      metadata: o.metadata ?? '',
      generation,
      commitTimestamp: now,
      commitId,
    });
    const memberId = req.memberId;
    if (memberId === undefined || memberId === '') {
      await this.requireInactive(groupId, 'Offsets can be committed without a member id');
      const records = req.offsets.map((o) => record(o, -1));
      const written = await this.writeEach(groupId, records);
      return written.map((w, i) => (w.status === 'fulfilled' ? { status: 'fulfilled', value: records[i]! } : w));
    }
    // The offset items first, then the group: the order the fence argument needs.
    const items = await Promise.all(
      req.offsets.map((o) => this.deps.metadata.get<OffsetRecord>(groupPk(groupId), offsetSk(o.topic, o.partition))),
    );
    const validated = await this.validate(groupId, memberId, req);
    const paceRecord = recordPacer(groupPk(groupId), this.pacer());
    return Promise.allSettled(
      req.offsets.map(async (o, i) => {
        const pace = paceRecord();
        const outcome = await optimisticUpdate<OffsetRecord, OffsetRecord>({
          metadata: this.deps.metadata,
          pk: groupPk(groupId),
          sk: offsetSk(o.topic, o.partition),
          known: { item: items[i] },
          giveUp: {
            errorName: 'COORDINATOR_NOT_AVAILABLE',
            message: `Too many concurrent commits to ${o.topic}-${o.partition} of group ${groupId}; retry`,
          },
          decide: async (item, attempt) => {
            // A lost race re-validates: the group is read again after the offset item found.
            let group = attempt === 0 ? validated : await this.validate(groupId, memberId, req, [o]);
            if ((item?.value.fence ?? 0) > group.version) {
              // A group write that fenced this partition is in flight, or died: move past it.
              await this.deps.coordinator.advancePast(groupId, group.version);
              group = await this.validate(groupId, memberId, req, [o]);
            }
            const next = {
              ...record(o, group.generation),
              ...(item?.value.fence !== undefined && { fence: item.value.fence }),
            };
            // Held already (validated as any commit of the member's): nothing to write.
            if (holdsCommit(item?.value, next)) return { done: item!.value };
            // The write stays conditional on the offset item read before the group: a group
            // write that moved the partition while this was paced fenced that item, so the write
            // fails and the retry validates again.
            await pace(next);
            return { write: next, answer: () => next };
          },
          recognise: (found) => (found?.value.commitId === commitId ? found.value : undefined),
        });
        return outcome.result;
      }),
    );
  }

  /**
   * KIP-447's check of a transactional offset commit: the member must be in the group at this
   * generation and own the partitions, as for its own commits; a zombie consumer is fenced.
   */
  async checkMember(
    groupId: string,
    memberId: string,
    generation: number,
    offsets: OffsetCommitEntry[],
  ): Promise<void> {
    const snap = await this.deps.coordinator.findMember(groupId, memberId);
    if (!snap || snap.group.deletingSince !== undefined) throw unknownMember(groupId, memberId);
    checkMemberCommit(snap.group, memberId, generation, offsets);
  }

  /** The member holds every partition of `offsets` at its epoch, in the group as read now. */
  private async validate(
    groupId: string,
    memberId: string,
    req: OffsetCommitRequest,
    offsets = req.offsets,
  ): Promise<{ version: number; generation: number }> {
    const snap = await this.deps.coordinator.findMember(groupId, memberId);
    if (!snap || snap.group.deletingSince !== undefined) throw unknownMember(groupId, memberId);
    return {
      version: snap.version,
      generation: checkMemberCommit(snap.group, memberId, req.generation, offsets, req.staleEpoch),
    };
  }

  /**
   * Writes offset records as they are (validation is the caller's: admin commits and resets, with
   * the group inactive, or a classic member's generation checked), each over the version it finds,
   * keeping the item's fence, paced on the group's key; what an item holds already is not written
   * again (writeOffsetRecords). A write retried after an ambiguous outcome finds its own record
   * held, so there is nothing else to recognise.
   */
  async write(groupId: string, records: OffsetRecord[]): Promise<void> {
    firstFailure(await this.writeEach(groupId, records));
  }

  /** `write` with each record's outcome its own (Kafka's OffsetCommit answers per partition). */
  writeEach(groupId: string, records: OffsetRecord[]): Promise<PromiseSettledResult<void>[]> {
    return writeOffsetRecordsEach(this.deps.metadata, groupId, records, this.pacer());
  }

  /** One call's pace on the group's key. */
  private pacer(): Pace {
    return pacer(() => this.deps.clock.now(), this.deps.sleep ?? realSleep, PACED_WRITE_RATE, PACED_WRITE_BURST);
  }

  /** Kafka's OffsetDelete of one partition's committed offset (the caller checked the group). */
  async delete(groupId: string, topic: string, partition: number): Promise<void> {
    validateGroupId(groupId);
    await this.deps.metadata.delete(groupPk(groupId), offsetSk(topic, partition));
  }

  /** Committed offsets of a group, optionally of one topic; offsets of deleted topics are left out. */
  async committed(groupId: string, topic?: string): Promise<OffsetRecord[]> {
    validateGroupId(groupId);
    const items = await this.deps.metadata.query<OffsetRecord>(groupPk(groupId), {
      beginsWith: topic === undefined ? OFFSET_PREFIX : `${OFFSET_PREFIX}${topic}#`,
    });
    const ids = new Map<string, string | undefined>();
    for (const t of new Set(items.map((i) => i.value.topic))) {
      ids.set(
        t,
        await this.deps.topics.get(t).then(
          (x) => x.id,
          (e: unknown) => (isKafkaError(e, 'UNKNOWN_TOPIC_OR_PARTITION') ? undefined : Promise.reject(e)),
        ),
      );
    }
    return items
      .map((i) => i.value)
      .filter((r) => ids.get(r.topic) === r.topicId)
      .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
  }

  async committedOffset(groupId: string, topic: Topic, partition: number): Promise<OffsetRecord | undefined> {
    const item = await this.deps.metadata.get<OffsetRecord>(groupPk(groupId), offsetSk(topic.name, partition));
    return item && item.value.topicId === topic.id ? item.value : undefined;
  }

  /**
   * Where a consumer of the group starts on a partition: the committed offset when it lies within
   * [log start offset, high watermark], else per auto.offset.reset: earliest = log start offset,
   * latest = high watermark (the last stable offset for a read_committed consumer), none =
   * NO_OFFSET_FOR_PARTITION (nothing committed, or a negative offset, which consumers read as
   * none) or OFFSET_OUT_OF_RANGE (committed offset outside the log), as the Kafka consumer decides.
   */
  async position(
    groupId: string,
    topic: Topic,
    partition: number,
    reset: AutoOffsetReset,
    known?: OffsetRecord | null,
    isolation: IsolationLevel = 'read_uncommitted',
  ): Promise<Position> {
    const committed =
      known === undefined ? await this.committedOffset(groupId, topic, partition) : (known ?? undefined);
    const state = await this.deps.log.state(topic, partition);
    if (committed && committed.offset >= state.logStartOffset && committed.offset <= state.highWatermark) {
      return { offset: committed.offset, source: 'committed', committed };
    }
    if (reset === 'none') {
      if (hasPosition(committed)) {
        throw new KafkaError(
          'OFFSET_OUT_OF_RANGE',
          `Committed offset ${committed.offset} of ${topic.name}-${partition} is outside [${state.logStartOffset}, ${state.highWatermark}] and auto.offset.reset is none`,
        );
      }
      throw new KafkaError(
        'NO_OFFSET_FOR_PARTITION',
        `Group ${groupId} has no committed offset for ${topic.name}-${partition} and auto.offset.reset is none`,
      );
    }
    const latest = isolation === 'read_committed' ? lastStableOffset(state) : state.highWatermark;
    return {
      offset: reset === 'earliest' ? state.logStartOffset : latest,
      source: 'reset',
      ...(committed ? { committed } : {}),
    };
  }

  /**
   * Admin changes (commit without a member, reset) need a group without members (Empty, or absent:
   * then it is created unless `create` is false, as for a dry run).
   */
  async requireInactive(groupId: string, what: string, create = true): Promise<GroupRecord | undefined> {
    const snap = await this.deps.coordinator.find(groupId);
    if (snap && snap.group.deletingSince !== undefined) {
      throw new KafkaError(
        'COORDINATOR_NOT_AVAILABLE',
        `Group ${groupId} is being deleted; retry once the deletion completed`,
      );
    }
    if (snap && Object.keys(snap.group.members).length > 0) {
      throw new KafkaError(
        'NON_EMPTY_GROUP',
        `${what} only if the group '${groupId}' is inactive, but the current state is ${groupState(snap.group)}.`,
      );
    }
    if (snap || !create) return snap?.group;
    return this.deps.coordinator.ensureExists(groupId);
  }

  private async resolveTopics(names: string[]): Promise<Map<string, Topic>> {
    const out = new Map<string, Topic>();
    for (const name of new Set(names)) out.set(name, await this.deps.topics.get(name));
    return out;
  }
}

/**
 * A member's commit is accepted for partitions it holds (assigned, or still being revoked) at its
 * current epoch, as KIP-848 validates commits against the member epoch.
 */
function checkMemberCommit(
  g: GroupRecord,
  memberId: string,
  generation: number | undefined,
  offsets: OffsetCommitEntry[],
  staleEpoch: 'ILLEGAL_GENERATION' | 'STALE_MEMBER_EPOCH' = 'ILLEGAL_GENERATION',
): number {
  const m = g.members[memberId];
  if (!m) throw unknownMember(g.groupId, memberId);
  if (generation !== m.memberEpoch) {
    throw new KafkaError(
      staleEpoch,
      `Generation ${generation} of member ${memberId} is stale: the member is at generation ${m.memberEpoch}`,
    );
  }
  for (const o of offsets) {
    if (owns(m.assigned, o.topic, o.partition) || owns(m.revoking, o.topic, o.partition)) continue;
    if (owns(g.target[memberId] ?? {}, o.topic, o.partition)) {
      throw new KafkaError(
        'REBALANCE_IN_PROGRESS',
        `${o.topic}-${o.partition} is being moved to member ${memberId} but its previous owner has not released it yet`,
      );
    }
    throw new KafkaError(
      'ILLEGAL_GENERATION',
      `Member ${memberId} does not own ${o.topic}-${o.partition} in generation ${m.memberEpoch}`,
    );
  }
  return m.memberEpoch;
}

/**
 * GroupOffsets.write without a GroupOffsets (the transaction coordinator's commit writes offsets
 * this way too). With `pace`, each record's write first waits for its units (the writes keep under
 * what the group's partition key takes, storage/write-pace.ts). A record its item already holds
 * (`holdsCommit`: an earlier try of the same commit wrote it, or a commit of the same value less
 * than OFFSET_REFRESH_MS before) is not written again, nor paced: a retried commit or end goes on
 * where the last try stopped instead of writing all again. Every record's write is settled before
 * this returns or throws (the first error): none is left waiting behind an answer.
 */
export async function writeOffsetRecords(
  metadata: MetadataStore,
  groupId: string,
  records: OffsetRecord[],
  pace?: Pace,
): Promise<void> {
  firstFailure(await writeOffsetRecordsEach(metadata, groupId, records, pace));
}

/** writeOffsetRecords with each record's outcome its own, in the order of `records`. */
export function writeOffsetRecordsEach(
  metadata: MetadataStore,
  groupId: string,
  records: OffsetRecord[],
  pace?: Pace,
): Promise<PromiseSettledResult<void>[]> {
  const pk = groupPk(groupId);
  const paceRecord = recordPacer(pk, pace);
  return Promise.allSettled(
    records.map(async (r) => {
      const paceThis = paceRecord();
      await optimisticUpdate<OffsetRecord, undefined>({
        metadata,
        pk,
        sk: offsetSk(r.topic, r.partition),
        giveUp: {
          errorName: 'COORDINATOR_NOT_AVAILABLE',
          message: `Too many concurrent commits to ${r.topic}-${r.partition} of group ${groupId}; retry`,
        },
        decide: async (item) => {
          const held = item?.value;
          // Held already (an earlier try of this commit wrote it, or a recent one the same): no write.
          if (holdsCommit(held, r)) return { done: undefined };
          const write = { ...r, ...(held?.fence !== undefined && { fence: held.fence }) };
          await paceThis(write);
          return { write, answer: () => undefined };
        },
      });
    }),
  );
}

/**
 * One call's pace per offset record: each record's write waits for the call's write units so far
 * once, on the first write decided for it (a lost race's retry is not a new record; a record its
 * item holds already is never paced). Without `pace`, nothing waits.
 */
function recordPacer(pk: string, pace: Pace | undefined): () => (write: OffsetRecord) => Promise<void> {
  let units = 0;
  return () => {
    let paced = !pace;
    return async (write) => {
      if (paced) return;
      paced = true;
      await pace!((units += writeUnitsOf(pk, offsetSk(write.topic, write.partition), write)));
    };
  };
}

/**
 * The values of writes that all settled (Promise.allSettled: paced writes take seconds, and an
 * answer sent with some still waiting would leave them to run after it, in a Lambda frozen until
 * its next invocation), or the first failure among them.
 */
function firstFailure<T>(settled: PromiseSettledResult<T>[]): T[] {
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}
