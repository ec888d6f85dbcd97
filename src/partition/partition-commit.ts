import { KafkaError } from '../wire/errors.js';
import { PRODUCER_CACHE_SIZE, type ProducerSequence, withProducerEntry } from './producer-state.js';
import { producerEntry, spillProducers } from './producer-items.js';
import { shrinkIsr } from './isr.js';
import { optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore, MetaItem } from '../storage/ports.js';
import { indexItems, sameCommit, type OffsetIndex } from './offset-index.js';
import {
  computeHighWatermark,
  firstUnstableOffset,
  initialPartitionState,
  logEndOffset,
  type CommitRecord,
  type OpenTransaction,
  type PartitionState,
  type ProducerBatch,
} from './partition-state.js';
import { isCurrentTopic, type TopicMeta } from '../topics/topics.js';
import { partitionPk, STATE_SK } from '../storage/key-layout.js';
import { INDEX_BESIDE_COMMIT_LEVEL, itemFormatVersion, writeVersion } from '../storage/formats.js';

/** What a commit needs to know about the batches it makes visible. */
export interface PendingCommit {
  objectKey: string;
  start: number;
  end: number;
  recordCount: number;
  maxTimestamp: number;
  producer?: ProducerBatch;
  /** The batch is a transaction marker: it ends this producer's open transaction in the partition. */
  marker?: { type: 'COMMIT' | 'ABORT'; producerId: number; producerEpoch: number };
}

export interface CommitPlan {
  pending: PendingCommit;
  /** The leader epoch the writer saw when it chose where to write: any other epoch fences it. */
  leaderEpoch: number;
  /** Replicas whose stores hold the object. */
  holders: number[];
  /** Followers whose write failed: they leave the ISR in the same conditional write. */
  failedFollowers: number[];
  /**
   * Re-checked against every state the commit tries to write over (an idempotent producer's
   * sequence check, given the producer's entry in it): returns the offsets of an already-appended
   * duplicate, or throws.
   */
  guard?: (
    state: PartitionState,
    producer: ProducerSequence | undefined,
  ) => { baseOffset: number; lastOffset: number } | undefined;
}

export type CommitResult =
  | {
      kind: 'committed';
      entry: CommitRecord;
      state: PartitionState;
      version: number;
      /** How many times the conditional write lost a race and was retried. */
      retries: number;
      /** Whether the index entry landed (if not, the next writer or reader repairs it). */
      indexed: boolean;
    }
  | { kind: 'duplicate'; baseOffset: number; lastOffset: number; state: PartitionState };

/** The guard refused the state the caller had read, which may be stale: decide again on a fresh read. */
const STALE = { kind: 'stale' } as const;

export interface StateRead {
  state: PartitionState;
  /** Absent when no item exists yet. */
  version?: number;
  /** The item found is another topic incarnation's (one deleted, or one that took the name since). */
  otherTopic?: true;
}

/**
 * Reads the partition state item as stored (the state of a topic without a commit log; see
 * `readPartitionState` in shard-state.ts for every topic); a missing item, or one left by a deleted
 * topic of the same name, reads as the initial state (keeping the stale item's version so the first
 * write replaces it).
 */
export async function readStoredState(
  metadata: MetadataStore,
  topic: TopicMeta,
  partition: number,
  storeCount: number,
): Promise<StateRead> {
  const item = await metadata.get<PartitionState>(partitionPk(topic.name, partition), STATE_SK);
  return stateFromItem(item, topic, partition, storeCount);
}

export function stateFromItem(
  item: MetaItem<PartitionState> | undefined,
  topic: TopicMeta,
  partition: number,
  storeCount: number,
): StateRead {
  if (item && item.value.topicId === topic.id) return { state: item.value, version: item.version };
  return {
    state: initialPartitionState(topic.id, partition, topic.replicationFactor, storeCount),
    version: item?.version,
    ...(item ? { otherTopic: true as const } : {}),
  };
}

export interface CommitDeps {
  metadata: MetadataStore;
  index: OffsetIndex;
  storeCount: number;
  now: () => number;
  /** Whether this process wrote the index entry of exactly this commit (see `commitIdentity`). */
  isIndexed: (pk: string, entry: CommitRecord) => boolean;
  /** The cluster's feature level (cached by the caller); absent: level 1. */
  featureLevel?: (now: number) => Promise<number>;
}

/**
 * How many producers a state keeps (producer-state.ts): PRODUCER_CACHE_SIZE once it is
 * `partition-state` version 2, which a commit makes it from the feature level that allows it,
 * and which it stays (a process that has not seen the raise yet keeps to it too); else undefined,
 * version 1's bound.
 */
const producerCache = (state: PartitionState, level: number) =>
  itemFormatVersion(state) >= 2 || writeVersion('partition-state', level) >= 2 ? PRODUCER_CACHE_SIZE : undefined;

/** How many commits' tokens the state keeps, so a retried write is recognised behind a few later commits. */
const RECENT_COMMITS = 8;

/**
 * A commit's token: its object and byte range. Object keys are fresh per request (48 random bits
 * after the last '-'), and one partition's batches take one range of it, so no two commits of a
 * partition share a token. Kept short: the state item stays within one 1 KB write unit.
 */
export const commitToken = (c: { objectKey: string; start: number }) =>
  `${c.objectKey.slice(Math.max(c.objectKey.lastIndexOf('-'), c.objectKey.lastIndexOf('/')) + 1)}@${c.start}`;

/** What identifies one commit for the index-repair note: epoch, object, range and offset. */
export const commitIdentity = (c: CommitRecord) =>
  `${c.leaderEpoch}|${c.objectKey}|${c.start}|${c.end}|${c.baseOffset}`;

/**
 * Step 3 and 4 of the commit protocol (docs/architecture.md): assign the next offsets with one
 * conditional write of the partition state, and write the index entry (with it on SQLite, beside
 * it from feature level 6 elsewhere, else after it).
 *
 * Timeline of a race: writers A and B both read version v with LEO = n. A's write
 * (`ifVersion v`) lands: offsets n.. are A's. B's fails with the item as A left it (v+1, LEO
 * n + |A|), so B retries from there without a re-read; the object B already wrote never changes,
 * because objects carry no absolute offsets. Offsets therefore stay gap-free and unique. If the
 * item B finds has another leader epoch, B wrote to a store that may no longer lead: it is
 * fenced (FENCED_LEADER_EPOCH) and must start over.
 *
 * An ambiguous outcome: A's write applied, its answer was lost and the SDK sent it again; the repeat
 * fails its condition against A's own write. The state carries the token of its last commits
 * (`lastCommit`, `recentCommits`), so A finds its token in the item and answers with the offsets it
 * wrote, instead of committing the same bytes again at new offsets.
 *
 * The state also keeps `lastCommit`. If a writer dies after its state write and before its index
 * write, the next writer (or reader) finds the index entry missing and writes it from that pointer
 * before the pointer is overwritten, so a committed batch is never unreachable.
 */
export async function commitToPartition(
  deps: CommitDeps,
  topic: TopicMeta,
  partition: number,
  plan: CommitPlan,
  read?: StateRead,
): Promise<CommitResult> {
  const pk = partitionPk(topic.name, partition);
  const start = read ?? (await readStoredState(deps.metadata, topic, partition, deps.storeCount));
  const token = commitToken(plan.pending);
  const together = deps.metadata.putAll !== undefined;
  const level = (await deps.featureLevel?.(deps.now())) ?? 1;
  const producerId = plan.pending.producer?.producerId ?? plan.pending.marker?.producerId;
  // Step 4 beside step 3 where the store cannot write both at once (DynamoDB): the entry's write
  // starts with the state's, so the commit costs one write round trip, not two. Not for markers:
  // an ABORT's item, had its commit lost, would abort another producer's records.
  const beside = !together && level >= INDEX_BESIDE_COMMIT_LEVEL && plan.pending.marker === undefined;
  /** The entry the current attempt wrote beside its state write, and whether it is in place. */
  let besideWrite: { entry: CommitRecord; placed: Promise<boolean> } | undefined;
  /** The version the current attempt writes over. */
  let basedOn: number | undefined;
  type Step =
    | Extract<CommitResult, { kind: 'duplicate' }>
    | { kind: 'committed'; entry: CommitRecord; item: MetaItem<PartitionState> }
    | typeof STALE;
  const outcome = await optimisticUpdate<PartitionState, Step>({
    metadata: deps.metadata,
    pk,
    sk: STATE_SK,
    known: {
      item: start.version === undefined ? undefined : { pk, sk: STATE_SK, version: start.version, value: start.state },
    },
    attempts: 64,
    giveUp: {
      errorName: 'KAFKA_STORAGE_ERROR',
      message: `Too much contention committing to ${topic.name}-${partition}; nothing was appended, retry`,
    },
    decide: async (item, attempt) => {
      basedOn = item?.version;
      // On the first attempt `item` is the caller's read, already turned into this topic's state.
      const foreign =
        (attempt === 0 && start.otherTopic === true) || (item !== undefined && item.value.topicId !== topic.id);
      if (foreign && !(await isCurrentTopic(deps.metadata, topic))) {
        // The item is another incarnation's: this writer's topic was deleted (and the name taken
        // again) after it read the topic. Writing over it would reset the new topic's partition.
        throw new KafkaError(
          'UNKNOWN_TOPIC_OR_PARTITION',
          `Topic ${topic.name} was deleted while this request was writing to it; nothing was appended`,
        );
      }
      const { state } = stateFromItem(item, topic, partition, deps.storeCount);
      if (state.leaderEpoch !== plan.leaderEpoch) {
        throw new KafkaError(
          'FENCED_LEADER_EPOCH',
          `Leader epoch ${plan.leaderEpoch} of ${topic.name}-${partition} is stale; the current epoch is ${state.leaderEpoch}`,
        );
      }
      const now = deps.now();
      const producer =
        producerId === undefined ? undefined : await producerEntry(deps.metadata, pk, state, producerId, now);
      let duplicate: ReturnType<NonNullable<CommitPlan['guard']>>;
      try {
        duplicate = plan.guard?.(state, producer);
      } catch (e) {
        // The caller's read may predate a commit that landed since (often this process's own,
        // a moment ago): an out-of-order sequence there may be in order now. Only a state the
        // store has just returned can refuse a batch.
        if (read && attempt === 0) return { done: STALE };
        throw e;
      }
      if (duplicate) return { done: { kind: 'duplicate', ...duplicate, state } };
      const last = state.lastCommit;
      if (last && last.topicId === topic.id && !deps.isIndexed(pk, last)) {
        if (!(await deps.index.holds(topic.name, partition, last))) await deps.index.put(topic.name, partition, last);
      }
      const { next, evicted } = nextState(state, topic.id, plan, token, now, producer, producerCache(state, level));
      // Producers leaving the cache are written to their items before the state that drops them.
      if (evicted.length > 0) await spillProducers(deps.metadata, pk, topic.id, evicted);
      const entry = next.lastCommit!;
      besideWrite = beside ? { entry, placed: deps.index.putBeside(topic.name, partition, entry) } : undefined;
      return {
        write: next,
        // Step 4 in the same write where the store can (SQLite): the entry lands with the state.
        ...(together ? { alongside: indexItems(next.lastCommit!) } : {}),
        answer: (item) => ({ kind: 'committed', entry: next.lastCommit!, item }),
      };
    },
    recognise: async (found, attempted, retried) => {
      if (!found || !('write' in attempted) || found.value.topicId !== topic.id) return undefined;
      // The write we attempted is the one that applied: its entry, and the state as found.
      const entry = attempted.write.lastCommit!;
      if (carriesToken(found.value, token)) return { kind: 'committed', entry, item: found };
      // A repeat of our write, with so many writes since the version it wrote over that its token
      // may have rotated out of `recentCommits`. Had it applied, the next commit would have written
      // its index entry (the repair of step 4) before moving `lastCommit` on: the entry at our base
      // offset tells.
      // Only below the last commit: an entry at its offset may be one written beside a state write
      // that lost (ours, maybe), until the last commit's own replaces it.
      if (
        retried &&
        basedOn !== undefined &&
        found.version - basedOn >= RECENT_COMMITS &&
        (found.value.lastCommit?.baseOffset ?? -1) > entry.baseOffset &&
        (await deps.index.holds(topic.name, partition, entry))
      ) {
        return { kind: 'committed', entry, item: found };
      }
      return undefined;
    },
  });
  const step = outcome.result;
  if (step.kind === 'stale') return commitToPartition(deps, topic, partition, plan);
  if (step.kind === 'duplicate') return step;
  // Committed from here on: a failed index write is repaired from `lastCommit`, so it does not
  // turn an appended batch into an error the producer would retry (and duplicate). Written with
  // the state already (SQLite, unless the write was recognised after an ambiguous outcome: then
  // the entry is written again, the same entry), or beside it; else, or where another entry took
  // the offset first (one written beside a write that lost the race to this one), put over it.
  const placed = besideWrite && sameCommit(besideWrite.entry, step.entry) && (await besideWrite.placed);
  const indexed =
    (together && outcome.how === 'written') ||
    placed ||
    (await deps.index.put(topic.name, partition, step.entry).then(
      () => true,
      () => false,
    ));
  return {
    kind: 'committed',
    entry: step.entry,
    state: step.item.value,
    version: step.item.version,
    retries: outcome.retries,
    indexed,
  };
}

const carriesToken = (s: PartitionState, token: string) =>
  (s.lastCommit !== undefined && commitToken(s.lastCommit) === token) || (s.recentCommits ?? []).includes(token);

/** The state after the commit, and the producers that left its cache (`cache`: producerCache). */
export function nextState(
  state: PartitionState,
  topicId: string,
  plan: CommitPlan,
  token: string,
  now: number,
  producer: ProducerSequence | undefined,
  cache: number | undefined,
): { next: PartitionState; evicted: ProducerSequence[] } {
  const { pending } = plan;
  const shrunk = shrinkIsr(state, plan.failedFollowers);
  const baseOffset = logEndOffset(shrunk);
  const entry: CommitRecord = {
    topicId,
    baseOffset,
    lastOffset: baseOffset + pending.recordCount - 1,
    recordCount: pending.recordCount,
    maxTimestamp: pending.maxTimestamp,
    leaderEpoch: shrunk.leaderEpoch,
    objectKey: pending.objectKey,
    start: pending.start,
    end: pending.end,
    stores: plan.holders,
    ...(pending.producer ? { producer: pending.producer } : {}),
  };
  const end = entry.lastOffset + 1;
  // A holder advances only if its log was contiguous with this batch (a lagging follower is
  // caught up by the replica sync instead).
  const replicaLeo = { ...shrunk.replicaLeo };
  const lastCaughtUpMs = { ...shrunk.lastCaughtUpMs };
  for (const r of plan.holders) {
    if ((replicaLeo[String(r)] ?? 0) === baseOffset) replicaLeo[String(r)] = end;
    if (replicaLeo[String(r)] === end) lastCaughtUpMs[String(r)] = now;
  }
  const next: PartitionState = {
    ...shrunk,
    ...(cache !== undefined && { fv: 2 }),
    replicaLeo,
    lastCaughtUpMs,
    sizeInBytes: shrunk.sizeInBytes + (pending.end - pending.start),
    lastCommit: entry,
    recentCommits: [...(shrunk.recentCommits ?? []).filter((t) => t !== token), token].slice(-RECENT_COMMITS),
  };
  let evicted: ProducerSequence[] = [];
  if (pending.producer) {
    const last = { ...pending.producer, baseOffset, lastOffset: entry.lastOffset, updatedAt: now };
    evicted = takeProducer(next, last, now, cache);
  }
  if (pending.producer?.transactional) {
    const id = String(pending.producer.producerId);
    // The transaction's first batch here opens it; later ones only extend it.
    if (!shrunk.openTxns?.[id])
      next.openTxns = {
        ...shrunk.openTxns,
        [id]: { producerEpoch: pending.producer.producerEpoch, firstOffset: baseOffset, startedAt: now },
      };
  }
  if (pending.marker) evicted = applyMarker(next, entry, pending.marker, producer, now, cache);
  if (evicted.length > 0) next.pidItems = true;
  next.highWatermark = computeHighWatermark(next);
  return { next, evicted };
}

/** Makes `entry` the state's most recent producer; answers the producers that leave its cache. */
function takeProducer(
  next: PartitionState,
  entry: ProducerSequence,
  now: number,
  cache: number | undefined,
): ProducerSequence[] {
  const { table, evicted } = withProducerEntry(next, entry, now, cache);
  next.pids = table;
  delete next.producers;
  return evicted;
}

/**
 * A marker closes the producer's open transaction (if any: the caller's guard lets a marker of a
 * newer epoch through without one) and records on its index entry which range it ended. A marker
 * of a bumped epoch (a fenced or timed out producer) also moves the producer's epoch here, so a
 * zombie's late batch is fenced by the partition itself (INVALID_PRODUCER_EPOCH), not only by the
 * coordinator.
 */
function applyMarker(
  next: PartitionState,
  entry: CommitRecord,
  marker: NonNullable<PendingCommit['marker']>,
  producer: ProducerSequence | undefined,
  now: number,
  cache: number | undefined,
): ProducerSequence[] {
  const id = String(marker.producerId);
  const open: OpenTransaction | undefined = next.openTxns?.[id];
  const { [id]: _closed, ...rest } = next.openTxns ?? {};
  next.openTxns = rest;
  entry.control = {
    type: marker.type,
    producerId: marker.producerId,
    producerEpoch: marker.producerEpoch,
    firstOffset: open?.firstOffset ?? entry.baseOffset,
    // Kafka's AbortedTxn lastStableOffset: the oldest transaction still open, else past the marker
    // (any transaction begun later starts there). Kept on the commit record, which the abort item
    // is rebuilt from on repair, so it is computed once, from the state this commit is made on.
    ...(marker.type === 'ABORT' && {
      lastStableOffset: Math.min(firstUnstableOffset(next) ?? Infinity, entry.baseOffset + 1),
    }),
  };
  // A producer the partition has not seen takes the marker's epoch too (markerGuard says why).
  if (producer && producer.producerEpoch >= marker.producerEpoch) return [];
  // The entry's sequences belong to the old epoch: the new one starts at 0.
  const bumped = {
    producerId: marker.producerId,
    producerEpoch: marker.producerEpoch,
    lastSequence: -1,
    updatedAt: now,
  };
  return takeProducer(next, bumped, now, cache);
}
