/**
 * The commit of appends on a topic with a commit log (docs/architecture.md, "One conditional write
 * per request"): every partition of a request in one shard commits with one entry of the shard's
 * log (partition/shard-log.ts), decided on the partitions' resolved states (shard-state.ts) exactly
 * as `commitToPartition` decides on one: the leader epoch fences, the producer's sequence is
 * checked, offsets start at the log end, failed followers leave the ISR and the HW moves. A
 * partition that is refused (fenced, a duplicate, a sequence error) is left out of the entry and
 * answered alone; the others commit.
 */
import { randomBytes } from 'node:crypto';
import { KafkaError } from '../wire/errors.js';
import type { MetadataStore } from '../storage/ports.js';
import { partitionPk } from '../storage/key-layout.js';
import { isCurrentTopic, type TopicMeta } from '../topics/topics.js';
import { PRODUCER_CACHE_SIZE, type ProducerSequence } from './producer-state.js';
import { producerEntry, spillProducers } from './producer-items.js';
import { commitToken, nextState, type CommitPlan, type CommitResult, type StateRead } from './partition-commit.js';
import type { PartitionState } from './partition-state.js';
import { indexItems } from './offset-index.js';
import { perStore, shardKey } from './process-cache.js';
import { watchFold } from './fold-watch.js';
import {
  shardOf,
  ShardLog,
  touches,
  type AppendChange,
  type ShardEntry,
  type StateChange,
  type Tail,
} from './shard-log.js';
import { applyEntry, FOLD_AFTER_ENTRIES, foldShard, readShardPartitions, storedState } from './shard-state.js';

export interface ShardCommitDeps {
  metadata: MetadataStore;
  storeCount: number;
  now: () => number;
  /** The scheduler's durable timer slot width: an entry arms a fold timer (fold-watch.ts). */
  timerSlotMs?: number | undefined;
}

export type ShardOutcome = CommitResult | { kind: 'refused'; error: unknown };

type ShardRead = Awaited<ReturnType<typeof readShardPartitions>>;

/**
 * The entries this process wrote last, per metadata store and shard (topic incarnation and shard):
 * a read made before them is brought up to date with them, without reading them back.
 */
const ownEntries = perStore<Map<number, ShardEntry>>(10_000);
const OWN_ENTRIES_KEPT = 64;
function ownOf(metadata: MetadataStore, key: string): Map<number, ShardEntry> {
  const byShard = ownEntries(metadata);
  let own = byShard.get(key);
  if (!own) byShard.set(key, (own = new Map()));
  return own;
}

/**
 * The shard's partitions read ahead of the commit: beside the request's PUT, or (`afterPut`) once
 * its PUT is done, as a commit that paused (a sequence gap) reads before it decides again.
 */
export interface ShardPrefetch {
  read: Promise<ShardRead>;
  /** Read after the request's PUT: a refusal may be answered on it without reading again. */
  afterPut?: boolean;
  /** When the read began (the writer's clock, as entries' `at`). */
  startedAt: number;
}

/** Starts the read a commit of `partitions` (all of one shard) decides on, so it need not follow the PUT. */
export function prefetchShard(
  deps: ShardCommitDeps,
  topic: TopicMeta,
  shard: number,
  partitions: number[],
  afterPut = false,
): ShardPrefetch {
  const startedAt = deps.now();
  const read = readShardPartitions(deps.metadata, topic, shard, partitions, deps.storeCount, deps.now);
  read.catch(() => {}); // a failed read is read again by the commit
  // The fold timer the entry needs (usually armed already), beside the PUT too; the commit waits for it.
  watchFold(deps.metadata, topic, shard, deps.now(), deps.timerSlotMs).catch(() => {});
  return { read, startedAt, ...(afterPut && { afterPut }) };
}

/** The window over which a shard's recent write rate is taken from its entries' times. */
const RATE_WINDOW_MS = 1_000;

/**
 * How many entries other writers are expected to have added since a read begun at `readAt`: the
 * entries of the read's tail written in the second before it, at that rate, over the time since.
 * A tail that covers less than that second (this process resolved the shard moments before) counts
 * short, so the estimate errs towards the read being current.
 */
export function entriesExpectedSince(tail: Tail, readAt: number, now: number): number {
  const recent = tail.entries.filter((e) => e.entry.at >= readAt - RATE_WINDOW_MS && e.entry.at <= readAt).length;
  return (recent * Math.max(0, now - readAt)) / RATE_WINDOW_MS;
}

/**
 * The entries after a read's last one that this process wrote, if they are all there is between
 * (each is the next number): the read brought up to date with them. Undefined otherwise.
 */
function ownSince(own: Map<number, ShardEntry>, last: number): ShardEntry[] | undefined {
  const since: ShardEntry[] = [];
  for (let n = last + 1; own.has(n); n++) since.push(own.get(n)!);
  const newest = Math.max(last, ...own.keys());
  return last + since.length === newest ? since : undefined;
}

/**
 * Commits the appends (one per partition, all of one shard) of one request with one entry, or as
 * many as lost races need. The entry carries a token of this call: found in the entry the failed
 * condition returns, the write was this call's own (applied, its answer lost).
 *
 * With `prefetch` (read beside the request's PUT) the commit decides on that read instead of
 * reading after the PUT, so its answer waits one round trip less. Entries written since are
 * learned from the failed condition (and one Query: `ShardLog.append`'s `stale`), and a refusal
 * is only answered on a read made after the PUT, as a sequence gap or a newer epoch may be in
 * those entries. This process's own entries since the read are added from memory; where another
 * writer's entry lies between them and the read, the commit reads afresh.
 */
export async function commitToShard(
  deps: ShardCommitDeps,
  topic: TopicMeta,
  appends: { partition: number; plan: CommitPlan }[],
  prefetch?: ShardPrefetch,
): Promise<Map<number, ShardOutcome>> {
  const shard = shardOf(topic, appends[0]!.partition);
  const partitions = appends.map((a) => a.partition);
  const own = ownOf(deps.metadata, shardKey(topic, shard));
  const ahead = prefetch && (await prefetch.read.catch(() => undefined));
  // This process's commits since the read (one process serves many requests at once) are added to it.
  const since = ahead && partitions.every((p) => ahead.reads.has(p)) ? ownSince(own, ahead.tail.last) : undefined;
  const usable = since !== undefined;
  // Read before the PUT: entries written meanwhile may fill a gap or move an epoch (see above).
  const stale = usable && !prefetch!.afterPut;
  const { reads, tail, mark } = usable
    ? ahead!
    : await readShardPartitions(deps.metadata, topic, shard, partitions, deps.storeCount, deps.now);
  const states = new Map([...reads].map(([p, r]) => [p, r.state]));
  // Another incarnation of the topic in the read (this one deleted, its name taken again): unless
  // this one is still current, its entry would be acknowledged and never read.
  let foreign = [...reads.values()].some((r) => r.otherTopic) || tail.entries.some((e) => e.entry.topicId !== topic.id);
  let deleted: boolean | undefined;
  const learn = (entries: ShardEntry[]) => {
    for (const e of entries)
      for (const p of partitions) if (touches(e, p)) states.set(p, applyEntry(storedState(states.get(p)!), e, p).state);
  };
  learn(since ?? []);
  const known = usable ? { last: tail.last + since.length, entries: [] } : tail;
  // On a busy shard a read made beside the PUT is usually behind by the time the PUT is done: the
  // entry's write would lose its race (a failed write is billed a write unit, five times a read
  // unit) and then read what it missed. Reading that first costs the read alone, and one round
  // trip less. A quiet shard's commit still writes on the read made beside the PUT.
  let readFirst = stale && entriesExpectedSince(tail, prefetch!.startedAt, deps.now()) >= 0.5;
  const log = new ShardLog(deps.metadata, deps.timerSlotMs);
  const objectKey = appends[0]!.plan.pending.objectKey;
  const producer = appends.find((a) => a.plan.pending.producer)?.plan.pending.producer;
  const token = randomBytes(6).toString('base64url');
  let decided = new Map<number, ShardOutcome>();
  let written: ShardEntry | undefined;
  const { result, n, retries } = await log.append<Map<number, ShardOutcome>>(
    topic.name,
    shard,
    known,
    token,
    async (news, _n, old) => {
      if (readFirst) {
        readFirst = false;
        return { catchUp: true };
      }
      learn(news);
      foreign ||= news.some((e) => e.topicId !== topic.id);
      if (foreign && (deleted ??= !(await isCurrentTopic(deps.metadata, topic)))) {
        const error = new KafkaError(
          'UNKNOWN_TOPIC_OR_PARTITION',
          `Topic ${topic.name} was deleted while this request was writing to it; nothing was appended`,
        );
        return { done: new Map(partitions.map((p) => [p, { kind: 'refused', error }])) };
      }
      decided = new Map();
      const changes: AppendChange[] = [];
      const wholes: StateChange[] = [];
      const spills: { pk: string; evicted: ProducerSequence[] }[] = [];
      const now = deps.now();
      for (const { partition: p, plan } of appends) {
        const state = states.get(p)!;
        try {
          const made = await decideAppend(deps, topic, p, state, plan, now);
          if (made.kind === 'duplicate') {
            decided.set(p, made);
            continue;
          }
          if (plan.pending.marker) {
            // A marker is the partition's whole new state (its transaction closed, its commit's
            // `control`); an ABORT's item is written first, as on the per-partition commit.
            const commit = made.next.lastCommit!;
            const [abort] = indexItems(commit);
            if (commit.control?.type === 'ABORT')
              await deps.metadata.put(partitionPk(topic.name, p), abort!.sk, abort!.value);
            wholes.push({ partition: p, state: storedState(made.next), commit });
          } else changes.push(made.change);
          decided.set(p, {
            kind: 'committed',
            entry: made.next.lastCommit!,
            state: made.next,
            version: 0,
            retries: 0,
            indexed: false,
          });
          if (made.evicted.length > 0) spills.push({ pk: partitionPk(topic.name, p), evicted: made.evicted });
        } catch (e) {
          decided.set(p, { kind: 'refused', error: e });
        }
      }
      // A refusal or a duplicate is answered on the entries since the read (a gap filled, an epoch moved).
      if (old && [...decided.values()].some((o) => o.kind !== 'committed')) return { catchUp: true };
      if (changes.length === 0 && wholes.length === 0) return { done: decided };
      // Producers leaving a state's cache are in their items before the entry that drops them.
      await Promise.all(spills.map((s) => spillProducers(deps.metadata, s.pk, topic.id, s.evicted)));
      const write: ShardEntry = {
        topicId: topic.id,
        token,
        at: now,
        objectKey,
        ...(producer && {
          producer: {
            producerId: producer.producerId,
            producerEpoch: producer.producerEpoch,
            ...(producer.transactional && { transactional: true }),
          },
        }),
        appends: changes,
        states: wholes,
      };
      written = write;
      return { write, answer: () => decided };
    },
    { stale },
  );
  if (n !== undefined && written) {
    own.set(n, written);
    for (const k of own.keys()) if (k <= n - OWN_ENTRIES_KEPT) own.delete(k);
  }
  for (const [p, o] of result) if (o.kind === 'committed') result.set(p, { ...o, retries });
  // One writer folds at 64 entries past the mark; past twice that (it died first), every writer does.
  const unfolded = (n ?? 0) - mark;
  if (unfolded === FOLD_AFTER_ENTRIES || unfolded >= 2 * FOLD_AFTER_ENTRIES)
    await foldShard(deps.metadata, topic, shard, deps.storeCount).catch(() => {}); // the sweep folds it later
  return result;
}

/** One partition's append decided on its resolved state, as `commitToPartition` decides it. */
async function decideAppend(
  deps: ShardCommitDeps,
  topic: TopicMeta,
  p: number,
  state: PartitionState,
  plan: CommitPlan,
  now: number,
): Promise<
  | { kind: 'append'; change: AppendChange; next: PartitionState; evicted: ProducerSequence[] }
  | Extract<CommitResult, { kind: 'duplicate' }>
> {
  if (state.leaderEpoch !== plan.leaderEpoch)
    throw new KafkaError(
      'FENCED_LEADER_EPOCH',
      `Leader epoch ${plan.leaderEpoch} of ${topic.name}-${p} is stale; the current epoch is ${state.leaderEpoch}`,
    );
  // A marker's producer too: a marker of a bumped epoch moves the producer's epoch (applyMarker).
  const producerId = plan.pending.producer?.producerId ?? plan.pending.marker?.producerId;
  const pk = partitionPk(topic.name, p);
  const producer =
    producerId === undefined ? undefined : await producerEntry(deps.metadata, pk, state, producerId, now);
  const duplicate = plan.guard?.(state, producer);
  if (duplicate) return { kind: 'duplicate', ...duplicate, state };
  const { next, evicted } = nextState(
    storedState(state),
    topic.id,
    plan,
    commitToken(plan.pending),
    now,
    producer,
    PRODUCER_CACHE_SIZE,
  );
  const c = next.lastCommit!;
  const change: AppendChange = {
    partition: p,
    baseOffset: c.baseOffset,
    recordCount: c.recordCount,
    start: c.start,
    end: c.end,
    maxTimestamp: c.maxTimestamp,
    leaderEpoch: c.leaderEpoch,
    holders: c.stores,
    ...(plan.failedFollowers.length > 0 && { failedFollowers: plan.failedFollowers }),
    ...(c.producer && { baseSequence: c.producer.baseSequence }),
  };
  return { kind: 'append', change, next, evicted };
}

/** Partitions of one request waiting to commit together, per shard. */
interface Waiting {
  plan: CommitPlan;
  resolve: (o: ShardOutcome) => void;
  reject: (e: unknown) => void;
}

/**
 * The partitions of one request commit together: each run of the request submits its plan when it
 * is ready to commit, or says it is done (refused before, or finished); once every partition of a
 * shard still running has submitted, they commit as one entry.
 */
export class RequestCommit {
  private readonly outstanding: Set<number>;
  private readonly waiting = new Map<number, Waiting>();
  /**
   * Per shard, its partitions' read started with the request, or again by `readAgain`: the next
   * commit of the shard decides on it (and takes it).
   */
  private readonly prefetched = new Map<number, ShardPrefetch>();

  constructor(
    private readonly commit: (
      appends: { partition: number; plan: CommitPlan }[],
      prefetch?: ShardPrefetch,
    ) => Promise<Map<number, ShardOutcome>>,
    partitions: number[],
    /** The topic's `shardOf` (shard-log.ts): the partitions of a shard commit as one entry. */
    private readonly shardOf: (partition: number) => number,
    private readonly prefetch?: (shard: number, partitions: number[], afterPut?: boolean) => ShardPrefetch,
  ) {
    this.outstanding = new Set(partitions);
    if (prefetch)
      for (const shard of new Set(partitions.map(shardOf)))
        this.prefetched.set(
          shard,
          prefetch(
            shard,
            partitions.filter((p) => shardOf(p) === shard),
          ),
        );
  }

  submit(partition: number, plan: CommitPlan): Promise<ShardOutcome> {
    const answer = new Promise<ShardOutcome>((resolve, reject) =>
      this.waiting.set(partition, { plan, resolve, reject }),
    );
    this.flush(this.shardOf(partition));
    return answer;
  }

  /** The partition's state from the read started with the request (undefined once its shard committed). */
  readAhead(partition: number): Promise<StateRead | undefined> | undefined {
    return this.prefetched.get(this.shardOf(partition))?.read.then(
      (r) => r.reads.get(partition),
      () => undefined,
    );
  }

  /**
   * Reads the partition's state again, after the request's PUT (a run deciding anew: after a
   * sequence gap's pause, or an election), as the read its shard's next commit decides on, so the
   * run and its commit share one Query of the shard's log instead of making one each. The
   * partitions of the shard still running are read together; a read of this kind already waiting
   * for the commit is shared. Undefined without a commit log.
   */
  readAgain(partition: number): Promise<StateRead | undefined> | undefined {
    if (!this.prefetch) return undefined;
    const shard = this.shardOf(partition);
    let ahead = this.prefetched.get(shard);
    if (!ahead?.afterPut) {
      const running = [...this.outstanding].filter((p) => this.shardOf(p) === shard);
      ahead = this.prefetch(shard, running.includes(partition) ? running : [...running, partition], true);
      this.prefetched.set(shard, ahead);
    }
    return ahead.read.then(
      (r) => r.reads.get(partition),
      () => undefined,
    );
  }

  /** The run of `partition` will submit nothing more. */
  done(partition: number): void {
    this.outstanding.delete(partition);
    this.flush(this.shardOf(partition));
  }

  private flush(shard: number): void {
    const running = [...this.outstanding].filter((p) => this.shardOf(p) === shard);
    if (running.length === 0 || !running.every((p) => this.waiting.has(p))) return;
    const batch = running.map((p) => ({ partition: p, ...this.waiting.get(p)! }));
    for (const p of running) this.waiting.delete(p);
    const prefetch = this.prefetched.get(shard);
    this.prefetched.delete(shard);
    this.commit(
      batch.map(({ partition, plan }) => ({ partition, plan })),
      prefetch,
    ).then(
      (outcomes) => {
        for (const w of batch) w.resolve(outcomes.get(w.partition) ?? { kind: 'refused', error: missing(w.partition) });
      },
      (e: unknown) => {
        for (const w of batch) w.reject(e);
      },
    );
  }
}

const missing = (p: number) => new KafkaError('KAFKA_STORAGE_ERROR', `No outcome for partition ${p}`);

export type { Tail };
