/**
 * The partition state item (pk `part#{topic}#{p}`, sk `state`): the one item whose conditional
 * write commits an append. It carries the offsets Kafka keeps per partition (log start offset,
 * per-replica log end offsets, high watermark), the leader and its epoch, the epoch history, and a
 * pointer to the last commit so a crash between the state write and the index write is repaired.
 */

/** Where a committed run of batches lives; also the value of an index entry. */
export interface CommitRecord {
  /** The topic incarnation that wrote it: entries of a deleted topic with the same name are ignored. */
  topicId: string;
  baseOffset: number;
  lastOffset: number;
  recordCount: number;
  maxTimestamp: number;
  leaderEpoch: number;
  objectKey: string;
  /** Byte range of this partition's batches inside the object, end exclusive. */
  start: number;
  end: number;
  /** Which replica stores hold the object (indexes into the configured stores). */
  stores: number[];
  /** Producer id, epoch and sequence range, when the append came from an idempotent producer. */
  producer?: ProducerBatch;
  /** Set on the entry of a transaction marker (a control batch): which transaction it ended. */
  control?: TransactionMarkerInfo;
}

/** What a COMMIT or ABORT marker ended: the producer's transaction from firstOffset to the marker. */
export interface TransactionMarkerInfo {
  type: 'COMMIT' | 'ABORT';
  producerId: number;
  producerEpoch: number;
  /** The first offset of the transaction in this partition. */
  firstOffset: number;
  /**
   * ABORT markers: Kafka's AbortedTxn lastStableOffset, the first offset of the oldest other
   * transaction still open once the marker landed, or the marker offset + 1 (not capped by the high
   * watermark, unlike the partition's LSO). Every transaction aborted later starts at or after it,
   * which is what bounds a read of the aborted-transactions index in marker order
   * (OffsetIndex.abortedTransactionsRead). Absent on markers written before it was kept.
   */
  lastStableOffset?: number;
}

/** A transaction with records in this partition and no marker yet (Kafka's ongoing transactions). */
export interface OpenTransaction {
  producerEpoch: number;
  firstOffset: number;
  /** When its first batch was appended here (for finding hanging transactions). */
  startedAt: number;
}

/** One idempotent producer's batch: its sequence range and where it landed. */
export interface ProducerBatch {
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  lastSequence: number;
  /** A transactional producer's batch: it opens a transaction in the partition until a marker ends it. */
  transactional?: boolean;
}

/** The last batch per producer, committed atomically with the append it describes. */
export interface ProducerEntry extends ProducerBatch {
  baseOffset: number;
  lastOffset: number;
  updatedAt: number;
}

export interface EpochEntry {
  epoch: number;
  startOffset: number;
}

export interface PartitionState {
  /** Format version (src/storage/formats.ts): 2 once `pids` is a cache of the recent producers only. */
  fv?: number;
  topicId: string;
  leaderEpoch: number;
  /** Replica ids are store indexes; the leader is the replica whose store takes the first PUT. */
  leader: number;
  replicas: number[];
  isr: number[];
  /** Log end offset per replica id (as a string key, for JSON). */
  replicaLeo: Record<string, number>;
  highWatermark: number;
  logStartOffset: number;
  epochHistory: EpochEntry[];
  /** Total bytes of committed batches in the log (for retention.bytes). */
  sizeInBytes: number;
  lastCommit?: CommitRecord;
  /**
   * Tokens (object and range, see `commitToken`) of the last few commits, newest last: a commit
   * whose answer was lost recognises its own write in them, even behind later commits.
   */
  recentCommits?: string[];
  /** When each follower last had everything the leader had (for replica.lag.time.max.ms). */
  lastCaughtUpMs?: Record<string, number>;
  /**
   * Idempotent producers' last batches, packed (bounded; see packProducers in producer-state.ts);
   * in version 2 only the recent ones, the others in items of their own (producer-items.ts).
   */
  pids?: string;
  /** Set once a producer left `pids` for an item of its own (version 2): only then are items read. */
  pidItems?: true;
  /** The same as JSON objects keyed by producer id, as states written before the packed table hold it (read only). */
  producers?: Record<string, ProducerEntry>;
  /** Open transactions by producer id: the first of them is the first unstable offset. */
  openTxns?: Record<string, OpenTransaction>;
  /**
   * A topic with a commit log (partition/shard-log.ts): the last entry of the shard's log this
   * stored state is folded through.
   */
  clog?: number;
  /**
   * Never stored: the commits of the shard log's entries past `clog` that a reader resolved
   * (partition/shard-state.ts), in offset order, not in the index as of the read (the fold mark
   * is read with the entries): every commit from the first of them on is among them. Readers of
   * the index take them as its last entries, and a read from within them queries no index.
   */
  pending?: CommitRecord[];
}

/** Kafka assigns replica j of partition i to broker (i + j) mod n; here brokers are stores. */
export function assignReplicas(partition: number, replicationFactor: number, storeCount: number): number[] {
  return Array.from({ length: replicationFactor }, (_, j) => (partition + j) % storeCount);
}

export function initialPartitionState(
  topicId: string,
  partition: number,
  replicationFactor: number,
  storeCount: number,
): PartitionState {
  const replicas = assignReplicas(partition, replicationFactor, storeCount);
  return {
    topicId,
    leaderEpoch: 0,
    leader: replicas[0]!,
    replicas,
    isr: [...replicas],
    replicaLeo: Object.fromEntries(replicas.map((r) => [String(r), 0])),
    highWatermark: 0,
    logStartOffset: 0,
    epochHistory: [{ epoch: 0, startOffset: 0 }],
    sizeInBytes: 0,
  };
}

export const logEndOffset = (s: PartitionState): number => s.replicaLeo[String(s.leader)] ?? 0;

/** HW = min LEO over the ISR: the offset below which every in-sync replica holds the data. */
export function computeHighWatermark(s: PartitionState): number {
  const leos = s.isr.map((r) => s.replicaLeo[String(r)] ?? 0);
  return leos.length === 0 ? s.highWatermark : Math.max(s.highWatermark, Math.min(...leos));
}

/** Kafka's first unstable offset: the first offset of the oldest open transaction, if any. */
export function firstUnstableOffset(s: PartitionState): number | undefined {
  let first: number | undefined;
  for (const t of Object.values(s.openTxns ?? {}))
    if (first === undefined || t.firstOffset < first) first = t.firstOffset;
  return first;
}

/** Kafka's last stable offset: read_committed consumers read below it (the HW when no transaction is open). */
export function lastStableOffset(s: PartitionState): number {
  const first = firstUnstableOffset(s);
  return first === undefined ? s.highWatermark : Math.min(first, s.highWatermark);
}
