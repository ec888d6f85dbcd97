/**
 * The table and bucket layout, in one place. The metadata store is one table of (pk, sk) items;
 * the object stores hold request objects and segments. Numbers in keys are zero padded so that sort
 * order is numeric order (offsets to 20 digits, milliseconds to 13).
 *
 * pk `cluster`                      sk `topic#{name}` (a topic), `group#{id}` (the group registry),
 *                                   `cgroup#{id}` (the classic group registry), `sgroup#{id}` (share groups),
 *                                   `producer-id-seq`, `scheduler` (the lease), `timer-cursor#{kind}`,
 *                                   `feature-level` (src/storage/feature-level.ts), `process#{id}` (a running process)
 * pk `part#{topic}#{p}`             sk `state` (the partition state: the commit point),
 *                                   `idx#{baseOffset}` (the offset index), `cleaner` (compaction's checkpoint),
 *                                   `abort#{markerOffset}` (the aborted-transactions index),
 *                                   `pid#{producerId}` (a producer that left the state's cache)
 * pk `clog#{topic}#{shard}`         sk `e#{n}` (entry n of the shard's commit log), `folded` (its fold mark)
 * pk `pid#{producerId}`             sk `meta` (the producer's epoch)
 * pk `group#{id}`                   sk `meta`, `mbr#{memberId}` (a member of a KIP-848 group, from group format 2),
 *                                   `sum#{shard}` (what target assignment needs of its members, from group format 3),
 *                                   `classic` (the classic protocol's group), `off#{topic}#{p}`
 *                                   (committed offsets), `inst#{name}` (v2 consumer instances)
 * pk `share#{id}`                   sk `config` (a share group's configs), `sp#{topic}#{p}` (a share-partition),
 *                                   `smbr#{memberId}` (a Kafka share consumer's membership, src/share/share-members.ts)
 * pk `timer#{slot}`                 sk `{expiry}#{kind}#{id}` (durable timers)
 * pk `txn#{transactionalId}`        sk `state` (the transaction coordinator's state of the id); from transaction
 *                                   format 2, `p#{topic}#{p}`, `g#{groupId}`, `o#{groupId}#{topic}#{p}` (a
 *                                   partition, group or pending offset of its transaction, src/transactions/transaction-items.ts)
 * pk `txn-ids`                      sk `{transactionalId}` (the registry of transactional ids)
 * pk `txn-offsets#{groupId}`        sk `{transactionalId}` (a transaction may hold offsets of the group)
 * pk `acl`                          sk the ACL's fields, URI-encoded and joined by `|` (one item per ACL)
 * pk `quota`                        sk `user={name}`, `client-id={id}`, both joined by `,` (`<default>` for a default)
 * pk `scram`                        sk `{user, URI-encoded}|{mechanism}` (a user's SCRAM credential, hashed as Kafka stores it)
 * pk `triggers`                     sk `{name}` (a trigger's definition, src/triggers)
 * pk `trigger#{name}`               sk `lease#{topic}#{p}` (a partition's delivery lease)
 *
 * objects `data/{topicId}/{shard}/{ms}-{hex}.v2` (one produce request; `data/{topicId}/{ms}-{hex}` in
 * format 1) and `segments/{topicId}/{partition}/{baseOffset}-{ms}-{hex}` (maintenance's per-partition
 * segments).
 */
import { randomFillSync } from 'node:crypto';
import { withObjectFormat } from './formats.js';

const pad13 = (t: number) => String(Math.max(0, Math.floor(t))).padStart(13, '0');
const pad20 = (n: number) => String(n).padStart(20, '0');
/** Random bytes drawn a few thousand at a time: one draw per key was 1-2% of a small produce request. */
const RANDOM_POOL = Buffer.alloc(6 * 1024);
let randomAt = RANDOM_POOL.length;
const suffix = () => {
  if (randomAt + 6 > RANDOM_POOL.length) {
    randomFillSync(RANDOM_POOL);
    randomAt = 0;
  }
  randomAt += 6;
  return RANDOM_POOL.toString('hex', randomAt - 6, randomAt);
};

// Cluster-wide items.
export const CLUSTER_PK = 'cluster';
export const TOPIC_PREFIX = 'topic#';
export const topicSk = (name: string) => `${TOPIC_PREFIX}${name}`;
/** A deleted topic whose data is still to purge, by topic id (src/topics/topic-purges.ts). */
export const TOPIC_PURGE_PREFIX = 'purge#';
export const topicPurgeSk = (topicId: string) => `${TOPIC_PURGE_PREFIX}${topicId}`;
/**
 * The group registry item makes listing groups one query (the same scheme as topics): it is written
 * before the group item is created and removed after the group item is deleted, so every existing
 * group is listed; a dangling registry item is skipped.
 */
export const GROUP_REGISTRY_PREFIX = 'group#';
export const groupRegistrySk = (groupId: string) => `${GROUP_REGISTRY_PREFIX}${groupId}`;
/** Classic groups (the Kafka listener's JoinGroup/SyncGroup) are listed from their own registry items. */
export const CLASSIC_GROUP_REGISTRY_PREFIX = 'cgroup#';
export const classicGroupRegistrySk = (groupId: string) => `${CLASSIC_GROUP_REGISTRY_PREFIX}${groupId}`;
export const PRODUCER_ID_SEQ_SK = 'producer-id-seq';
export const SCHEDULER_LEASE_SK = 'scheduler';
/** The lease and cursor of one shard of a maintenance round, and the lease of the durable timers' tick. */
export const SCHEDULER_SHARD_PREFIX = 'scheduler#shard#';
export const schedulerShardSk = (shard: number) => `${SCHEDULER_SHARD_PREFIX}${String(shard).padStart(4, '0')}`;
export const SCHEDULER_TIMERS_SK = 'scheduler#timers';
export const timerCursorSk = (kind: string) => `timer-cursor#${kind}`;
export const FEATURE_LEVEL_SK = 'feature-level';
export const PROCESS_PREFIX = 'process#';
export const processSk = (id: string) => `${PROCESS_PREFIX}${id}`;

// Access control: each set is one query.
export const ACL_PK = 'acl';
export const QUOTA_PK = 'quota';
export const SCRAM_PK = 'scram';
/** Triggers (src/triggers): every definition under one key, so listing them is one query. */
export const TRIGGERS_PK = 'triggers';
export const triggerLeasePk = (name: string) => `trigger#${name}`;
export const triggerLeaseSk = (topic: string, partition: number) => `lease#${topic}#${partition}`;
export const scramSk = (user: string, mechanism: string) => `${encodeURIComponent(user)}|${mechanism}`;

// One partition.
export const PARTITION_PREFIX = 'part#';
export const partitionPk = (topic: string, partition: number) => `${PARTITION_PREFIX}${topic}#${partition}`;
export const STATE_SK = 'state';
export const INDEX_PREFIX = 'idx#';
export const indexSk = (baseOffset: number) => `${INDEX_PREFIX}${pad20(baseOffset)}`;
export const CLEANER_SK = 'cleaner';
export const ABORT_PREFIX = 'abort#';
export const abortSk = (markerOffset: number) => `${ABORT_PREFIX}${pad20(markerOffset)}`;
// A topic's commit log per shard of partitions (from feature level COMMIT_LOG_LEVEL,
// partition/shard-log.ts): entry n of shard s at pk `clog#{topic}#{s}`, sk `e#{n}`, and the
// shard's fold mark.
export const clogPk = (topic: string, shard: number) => `clog#${topic}#${shard}`;
export const CLOG_ENTRY_PREFIX = 'e#';
export const clogEntrySk = (n: number) => `${CLOG_ENTRY_PREFIX}${pad20(n)}`;
export const CLOG_FOLDED_SK = 'folded';
/** An idempotent producer's entry once it left the partition state's cache (src/partition/producer-items.ts). */
export const PRODUCER_ENTRY_PREFIX = 'pid#';
export const producerEntrySk = (producerId: number) => `${PRODUCER_ENTRY_PREFIX}${producerId}`;

// One transactional id (src/transactions), and their registry (listing is one query).
export const txnPk = (transactionalId: string) => `txn#${transactionalId}`;
export const TXN_STATE_SK = 'state';
export const TXN_PARTITION_PREFIX = 'p#';
export const TXN_GROUP_PREFIX = 'g#';
export const TXN_OFFSET_PREFIX = 'o#';
export const txnPartitionSk = (topic: string, partition: number) => `${TXN_PARTITION_PREFIX}${topic}#${partition}`;
export const txnGroupSk = (groupId: string) => `${TXN_GROUP_PREFIX}${groupId}`;
/** Topic names hold no `#`, so the last two `#` part the key whatever the group id holds. */
export const txnOffsetSk = (groupId: string, topic: string, partition: number) =>
  `${TXN_OFFSET_PREFIX}${groupId}#${topic}#${partition}`;
export const TXN_REGISTRY_PK = 'txn-ids';
/** The transactions that may hold offsets of a group (src/transactions/pending-offsets.ts), one item each. */
export const pendingOffsetsPk = (groupId: string) => `txn-offsets#${groupId}`;

// One idempotent producer.
export const producerPk = (producerId: number) => `pid#${producerId}`;
export const PRODUCER_META_SK = 'meta';

// One consumer group.
export const groupPk = (groupId: string) => `group#${groupId}`;
export const GROUP_META_SK = 'meta';
export const GROUP_MEMBER_PREFIX = 'mbr#';
export const groupMemberSk = (memberId: string) => `${GROUP_MEMBER_PREFIX}${memberId}`;
export const GROUP_SUMMARY_PREFIX = 'sum#';
export const groupSummarySk = (shard: number) => `${GROUP_SUMMARY_PREFIX}${String(shard).padStart(2, '0')}`;
export const CLASSIC_GROUP_SK = 'classic';
export const OFFSET_PREFIX = 'off#';
export const offsetSk = (topic: string, partition: number) => `${OFFSET_PREFIX}${topic}#${partition}`;
export const INSTANCE_PREFIX = 'inst#';
export const instanceSk = (name: string) => `${INSTANCE_PREFIX}${name}`;

// One share group (src/share): its registry item, its configs and one item per share-partition.
export const SHARE_GROUP_REGISTRY_PREFIX = 'sgroup#';
export const shareGroupRegistrySk = (groupId: string) => `${SHARE_GROUP_REGISTRY_PREFIX}${groupId}`;
export const shareGroupPk = (groupId: string) => `share#${groupId}`;
export const SHARE_GROUP_CONFIG_SK = 'config';
export const SHARE_PARTITION_PREFIX = 'sp#';
export const sharePartitionSk = (topic: string, partition: number) => `${SHARE_PARTITION_PREFIX}${topic}#${partition}`;
export const SHARE_MEMBER_PREFIX = 'smbr#';
export const shareMemberSk = (memberId: string) => `${SHARE_MEMBER_PREFIX}${memberId}`;

// Durable timers, bucketed by slot so a tick reads only the slots that are due.
export const timerPk = (slot: number) => `timer#${slot}`;
export const timerSkPrefix = (expiry: number) => pad13(expiry);
export const durableTimerSk = (expiry: number, kind: string, id: string) => `${pad13(expiry)}#${kind}#${id}`;

// Objects. Both kinds carry their creation time on the writer's clock, which the orphan sweep and
// the stability rule read (S3's LastModified is the store's clock, not ours).
export const dataPrefix = (topicId: string) => `data/${topicId}/`;
export const segmentPrefix = (topicId: string) => `segments/${topicId}/`;
/**
 * A new request object's key in format `version` (`writeVersion('request-object', level)`).
 * Format 1 (v0.1.0's) keeps a topic's objects in one key range in time order, and S3 takes about
 * 3,500 PUT/s and 5,500 GET/s per prefix: that was a topic's ceiling, whatever its partitions.
 * Format 2 puts a shard, the first hex digit of the key's random part, before the time: a topic's
 * objects spread evenly over DATA_SHARDS prefixes (10,000 PUT/s is 625 per prefix). Every reader
 * finds objects by the key an index entry holds, and every sweep lists `dataPrefix(topicId)`
 * whole, so both formats are read and swept alike.
 */
export const DATA_SHARDS = 16;
export function newRequestObjectKey(topicId: string, now: number, version: number): string {
  const random = suffix();
  if (version < 2) return `${dataPrefix(topicId)}${pad13(now)}-${random}`;
  return withObjectFormat(`${dataPrefix(topicId)}${random[0]}/${pad13(now)}-${random}`, version);
}
export const newSegmentKey = (topicId: string, partition: number, baseOffset: number, now: number) =>
  `${segmentPrefix(topicId)}${partition}/${pad20(baseOffset)}-${pad13(now)}-${suffix()}`;

// A key may end in a format version (`.v2`, src/storage/formats.ts): the sweep and the stability
// rule read the time of every format, so objects of a newer format are never taken for strangers.
const DATA_KEY = /^data\/[^/]+\/(?:[0-9a-f]\/)?(\d{13})-[0-9a-f]+(?:\.v\d+)?$/;
const SEGMENT_KEY = /^segments\/[^/]+\/\d+\/\d{20}-(\d{13})-[0-9a-f]+(?:\.v\d+)?$/;

/**
 * When the object was written, for the stability rule: a request object's time, or -Infinity for
 * a segment (its content was stable, hence old, when it was written). Undefined for other keys.
 */
export function objectCreatedAt(key: string): number | undefined {
  const data = DATA_KEY.exec(key);
  if (data) return Number(data[1]);
  if (SEGMENT_KEY.test(key)) return -Infinity;
  return undefined;
}

/** When the object was written (request objects and segments alike), for the orphan sweep. */
export function objectWrittenAt(key: string): number | undefined {
  const m = DATA_KEY.exec(key) ?? SEGMENT_KEY.exec(key);
  return m ? Number(m[1]) : undefined;
}

export const isSegmentKey = (key: string) => SEGMENT_KEY.test(key);
