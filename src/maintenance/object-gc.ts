import { shardsOf, ShardLog } from '../partition/shard-log.js';
import { createHash } from 'node:crypto';
import type { PartitionState } from '../partition/partition-state.js';
import { expandIndexItems, type StoredIndexValue } from '../partition/index-item.js';
import type { Topic } from '../topics/topics.js';
import type { MetadataStore, ObjectStore } from '../storage/ports.js';
import type { DurableTimer, DurableTimers } from '../timer/durable-timers.js';
import {
  dataPrefix,
  INDEX_PREFIX,
  objectWrittenAt,
  partitionPk,
  segmentPrefix,
  STATE_SK,
} from '../storage/key-layout.js';

/**
 * Object garbage collection: a mark-and-sweep per topic, and the delayed deletion it schedules.
 *
 * Objects are shared (one request object holds several partitions' runs), so no single step can
 * tell that an object is free. The sweep marks every object any index entry of the topic's
 * incarnation references, in any partition, plus every partition state's last-commit pointer
 * (which may not be indexed yet); then it lists `data/{topicId}/` and `segments/{topicId}/` on every
 * store. An object nothing references and older than the orphan grace (by the time in its key) is
 * either dropped by retention, merge or compaction, or was never committed (a produce that died
 * after its PUT); either way nothing can reference it again: new references are only ever made to
 * new objects, and the grace outlasts any request that might still commit one it wrote. Such
 * objects get a durable `delete-objects` timer due after the topic's file.delete.delay.ms, so
 * readers that looked an entry up just before it went away can still read the object meanwhile.
 *
 * The timer handler deletes the keys from the stores named; deleting a missing key is fine, so
 * firing twice does no harm.
 */

export const DELETE_OBJECTS_KIND = 'delete-objects';

export interface DeleteObjectsPayload {
  topic: string;
  topicId: string;
  keys: string[];
  /** Replica store ids each key was found on (same order as keys). */
  stores: number[][];
  bytes: number;
}

export interface SweepOutcome {
  referenced: number;
  listed: number;
  scheduled: number;
  bytesScheduled: number;
}

const SWEEP_SK = 'sweep';
const sweepPk = (topicId: string) => `maint#${topicId}`;
const KEYS_PER_TIMER = 200;

/** Whether the topic's sweep is due (at most every max(interval, file.delete.delay.ms)). */
export async function sweepDue(
  metadata: MetadataStore,
  topic: Topic,
  now: number,
  intervalMs: number,
): Promise<boolean> {
  const last = await metadata.get<{ at: number }>(sweepPk(topic.id), SWEEP_SK);
  return !last || now - last.value.at >= Math.max(intervalMs, topic.config.fileDeleteDelayMs);
}

export async function sweepTopic(
  deps: { metadata: MetadataStore; stores: ObjectStore[]; timers: DurableTimers; now: number; graceMs: number },
  topic: Topic,
): Promise<SweepOutcome> {
  const { metadata, stores, now } = deps;
  const referenced = new Set<string>();
  for (let p = 0; p < topic.partitionCount; p++) {
    const pk = partitionPk(topic.name, p);
    let after = INDEX_PREFIX;
    for (;;) {
      const page = await metadata.query<StoredIndexValue>(pk, { gt: after, beginsWith: INDEX_PREFIX, limit: 500 });
      for (const { value } of expandIndexItems(page)) if (value.topicId === topic.id) referenced.add(value.objectKey);
      if (page.length < 500) break;
      after = page.at(-1)!.sk;
    }
    const state = await metadata.get<PartitionState>(pk, STATE_SK);
    const last = state?.value.lastCommit;
    if (last) referenced.add(last.objectKey);
  }
  // A topic with a commit log: the objects its entries name that are not folded into the index yet.
  if (topic.clog) {
    const log = new ShardLog(metadata);
    for (const shard of shardsOf(topic)) {
      const { entries } = await log.tail(topic.name, shard, await log.foldedThrough(topic.name, shard));
      for (const { entry } of entries) if (entry.objectKey) referenced.add(entry.objectKey);
    }
  }

  const found = new Map<string, { stores: number[]; size: number }>();
  let listed = 0;
  for (let s = 0; s < stores.length; s++) {
    for (const prefix of [dataPrefix(topic.id), segmentPrefix(topic.id)]) {
      let startAfter: string | undefined;
      do {
        const page = await stores[s]!.list(prefix, startAfter ? { startAfter } : {});
        for (const o of page.objects) {
          listed++;
          if (referenced.has(o.key)) continue;
          const written = objectWrittenAt(o.key) ?? o.lastModified;
          if (!(written < now - deps.graceMs)) continue;
          const f = found.get(o.key) ?? { stores: [], size: o.size };
          f.stores.push(s);
          found.set(o.key, f);
        }
        startAfter = page.nextStartAfter;
      } while (startAfter);
    }
  }

  const keys = [...found.keys()].sort();
  let bytesScheduled = 0;
  for (let i = 0; i < keys.length; i += KEYS_PER_TIMER) {
    const chunk = keys.slice(i, i + KEYS_PER_TIMER);
    const bytes = chunk.reduce((n, k) => n + found.get(k)!.size, 0);
    bytesScheduled += bytes;
    const payload: DeleteObjectsPayload = {
      topic: topic.name,
      topicId: topic.id,
      keys: chunk,
      stores: chunk.map((k) => found.get(k)!.stores),
      bytes,
    };
    const id = createHash('sha256').update(chunk.join('\n')).digest('hex').slice(0, 32);
    await deps.timers.schedule(
      { kind: DELETE_OBJECTS_KIND, id, expiry: now + topic.config.fileDeleteDelayMs, payload },
      now,
    );
  }
  await metadata.put(sweepPk(topic.id), SWEEP_SK, { at: now });
  return { referenced: referenced.size, listed, scheduled: keys.length, bytesScheduled };
}

/** The `delete-objects` timer handler: idempotent deletes, one call per store. */
export async function deleteObjects(
  stores: ObjectStore[],
  timer: DurableTimer,
): Promise<{ objects: number; bytes: number }> {
  const payload = timer.payload as DeleteObjectsPayload;
  const byStore = new Map<number, string[]>();
  payload.keys.forEach((key, i) => {
    for (const s of payload.stores[i] ?? []) byStore.set(s, [...(byStore.get(s) ?? []), key]);
  });
  for (const [s, keys] of byStore) await stores[s]?.delete(keys);
  return { objects: payload.keys.length, bytes: payload.bytes };
}
