/**
 * Stored formats carry their version (src/storage/formats.ts): a reader meets a version newer than
 * it knows with a clear error naming the format and the version it needs, never a misread, on every
 * path (items, objects, the local backend's SQLite files), and writers pick the version the
 * cluster's feature level allows.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openStorage } from '../../src/compose.js';
import { foldShard } from '../../src/partition/shard-state.js';
import { FaultyMetadataStore } from '../support/fault-injection.js';
import type { PartitionState } from '../../src/partition/partition-state.js';
import { expandIndexItems, packCommits, type StoredIndexValue } from '../../src/partition/index-item.js';
import {
  FORMATS,
  itemFormat,
  objectFormatVersion,
  UnknownFormatError,
  withObjectFormat,
  writeVersion,
} from '../../src/storage/formats.js';
import * as keys from '../../src/storage/key-layout.js';
import { testApp } from '../support/test-app.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function appWithOneRecord() {
  const t = testApp();
  expect((await t.call('POST', 'topics', { topic_name: 'f', partitions_count: 1 })).status).toBe(201);
  expect((await t.call('POST', 'topics/f/records', { value: { type: 'STRING', data: 'v1 record' } })).status).toBe(200);
  return t;
}

/**
 * The topic's commit log folded into its state and index items, and a new process over the same
 * storage: it reads those items (a process that resolved the log keeps what it resolved).
 */
async function foldedInNewProcess(t: ReturnType<typeof testApp>) {
  const topic = await t.services.topics.get('f');
  await foldShard(t.storage.metadata, topic, 0, t.storage.stores.length);
  // Its own view of the same table (what a process resolved is kept per metadata store).
  return testApp({ storage: { ...t.storage, metadata: new FaultyMetadataStore(t.storage.metadata) } });
}

describe('a reader meets a newer format', () => {
  it('refuses a partition state item of a newer version, naming the format and the version it needs', async () => {
    const t = await foldedInNewProcess(await appWithOneRecord());
    const pk = keys.partitionPk('f', 0);
    const state = (await t.storage.metadata.get<PartitionState>(pk, keys.STATE_SK))!;
    const newer = FORMATS['partition-state'].version + 1;
    await t.storage.metadata.put(pk, keys.STATE_SK, { ...state.value, fv: newer }, { ifVersion: state.version });

    const read = await t.call('GET', 'topics/f/partitions/0/records?offset=0');
    expect(read.status).toBe(503);
    expect(read.body.error).toBe('KAFKA_STORAGE_ERROR');
    expect(read.body.message).toContain(`${pk} / state is format version ${newer}`);
    expect(read.body.message).toContain(`reads partition-state up to version ${newer - 1}`);
    const write = await t.call('POST', 'topics/f/records', { value: { type: 'STRING', data: 'not written' } });
    expect(write.status).toBe(503);
    expect(write.body.message).toContain(`format version ${newer}`);
  });

  it('refuses an object whose key says a newer version, before reading its bytes as batches', async () => {
    const first = await appWithOneRecord();
    // The entry changed below is then not the last commit's, which readers take from the state.
    expect((await first.call('POST', 'topics/f/records', { value: { type: 'STRING', data: 'v1 too' } })).status).toBe(
      200,
    );
    const t = await foldedInNewProcess(first);
    const pk = keys.partitionPk('f', 0);
    // The fold packed both commits into one index item (partition/index-item.ts).
    const [item] = await t.storage.metadata.query<StoredIndexValue>(pk, { beginsWith: keys.INDEX_PREFIX });
    const [entry, ...others] = expandIndexItems([item!]).map((e) => e.value);
    const known = FORMATS['request-object'].version;
    const newer = withObjectFormat(entry!.objectKey.replace(/\.v\d+$/, ''), known + 1);
    await t.storage.stores[0]!.put(newer, await t.storage.stores[0]!.get(entry!.objectKey));
    await t.storage.metadata.put(
      pk,
      item!.sk,
      packCommits(entry!.topicId, [{ ...entry!, objectKey: newer }, ...others]),
    );

    const read = await t.call('GET', 'topics/f/partitions/0/records?offset=0');
    expect(read.status).toBe(503);
    expect(read.body.message).toContain(`${newer} is format version ${known + 1}`);
    expect(read.body.message).toContain(`reads request-object up to version ${known}`);
  });

  it('refuses a failed condition’s item of a newer version too (the writer would retry from it)', async () => {
    const t = testApp();
    await t.storage.metadata.put('acl', 'x', { fv: 9 });
    const error = await t.storage.metadata.put('acl', 'x', {}, { ifAbsent: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnknownFormatError);
    expect((error as UnknownFormatError).found).toBe(9);
  });

  it.each([
    ['metadata.sqlite', 'metadata-file'],
    [join('store-0', 'objects.sqlite'), 'pack-index'],
  ])('refuses to open a local %s of a newer version', async (file, format) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'formats-'));
    dirs.push(dataDir);
    mkdirSync(join(dataDir, 'store-0'), { recursive: true });
    const db = new Database(join(dataDir, file));
    db.pragma('user_version = 2');
    db.close();
    const opened = openStorage({ kind: 'local', dataDir, replicaStores: 1, fsync: false });
    if (format === 'metadata-file')
      await expect(opened).rejects.toThrow(/is format version 2; this code reads metadata-file up to version 1/);
    else {
      // The pack index opens on the store's first use.
      const storage = await opened;
      await expect(storage.stores[0]!.get('data/x/1')).rejects.toThrow(
        /is format version 2; this code reads pack-index up to version 1/,
      );
      storage.close();
    }
  });

  it('reads version 1 (no marker) and older-than-newest versions as before', async () => {
    const t = await appWithOneRecord();
    await t.storage.metadata.put('acl', 'one', { fv: 1, x: 1 });
    expect((await t.storage.metadata.get('acl', 'one'))!.value).toEqual({ fv: 1, x: 1 });
    const read = await t.call('GET', 'topics/f/partitions/0/records?offset=0');
    expect(read.status).toBe(200);
    expect(read.body.records).toHaveLength(1);
  });
});

describe('the format table', () => {
  it('names a format for every kind of item the key layout has', () => {
    const items: [string, string][] = [
      [keys.CLUSTER_PK, keys.topicSk('t')],
      [keys.CLUSTER_PK, keys.groupRegistrySk('g')],
      [keys.CLUSTER_PK, keys.classicGroupRegistrySk('g')],
      [keys.CLUSTER_PK, keys.PRODUCER_ID_SEQ_SK],
      [keys.CLUSTER_PK, keys.SCHEDULER_LEASE_SK],
      [keys.CLUSTER_PK, keys.timerCursorSk('k')],
      [keys.partitionPk('t', 0), keys.STATE_SK],
      [keys.partitionPk('t', 0), keys.indexSk(5)],
      [keys.partitionPk('t', 0), keys.CLEANER_SK],
      [keys.partitionPk('t', 0), keys.abortSk(5)],
      [keys.partitionPk('t', 0), keys.producerEntrySk(7)],
      [keys.producerPk(7), keys.PRODUCER_META_SK],
      [keys.groupPk('g'), keys.GROUP_META_SK],
      [keys.groupPk('g'), keys.CLASSIC_GROUP_SK],
      [keys.groupPk('g'), keys.offsetSk('t', 0)],
      [keys.groupPk('g'), keys.instanceSk('i')],
      [keys.timerPk(3), keys.durableTimerSk(1, 'k', 'i')],
      [keys.txnPk('x'), keys.TXN_STATE_SK],
      [keys.TXN_REGISTRY_PK, 'x'],
      [keys.pendingOffsetsPk('g'), 'x'],
      [keys.ACL_PK, 'a|b'],
      [keys.QUOTA_PK, 'user=a'],
      [keys.SCRAM_PK, keys.scramSk('alice', 'SCRAM-SHA-256')],
      [keys.CLUSTER_PK, keys.FEATURE_LEVEL_SK],
      [keys.CLUSTER_PK, keys.processSk('p')],
      [keys.CLUSTER_PK, keys.topicPurgeSk('id')],
    ];
    const formats = items.map(([pk, sk]) => itemFormat(pk, sk));
    expect(formats).not.toContain('other');
    expect(new Set(formats).size).toBe(25); // only the two group registries share one format
    for (const f of formats) expect(FORMATS[f].version).toBeGreaterThanOrEqual(1);
  });

  it('keeps the objects’ times readable whatever their version', () => {
    const key = keys.newRequestObjectKey('topic-id', 1234, 1);
    const spread = keys.newRequestObjectKey('topic-id', 1234, 2);
    const segment = keys.newSegmentKey('topic-id', 0, 10, 1234);
    expect(objectFormatVersion(key)).toBe(1);
    expect(objectFormatVersion(spread)).toBe(2);
    expect(objectFormatVersion(withObjectFormat(key, 2))).toBe(2);
    expect(keys.objectWrittenAt(withObjectFormat(key, 2))).toBe(1234);
    expect(keys.objectWrittenAt(spread)).toBe(1234);
    expect(keys.objectCreatedAt(spread)).toBe(1234);
    expect(keys.objectWrittenAt(withObjectFormat(spread.replace(/\.v2$/, ''), 3))).toBe(1234);
    expect(keys.objectWrittenAt(withObjectFormat(segment, 2))).toBe(1234);
    expect(keys.isSegmentKey(withObjectFormat(segment, 4))).toBe(true);
  });

  it('writes a newer version only once the feature level that introduces it is reached', () => {
    const levels = [
      { level: 1, formats: {} },
      { level: 2, formats: { 'partition-state': 2 } },
      { level: 3, formats: { 'partition-state': 3, segment: 2 } },
    ] as const;
    expect(writeVersion('partition-state', 1, levels)).toBe(1);
    expect(writeVersion('partition-state', 2, levels)).toBe(2);
    expect(writeVersion('segment', 2, levels)).toBe(1);
    expect(writeVersion('segment', 3, levels)).toBe(2);
    expect(writeVersion('partition-state', 9, levels)).toBe(3);
    expect(writeVersion('acl', 3, levels)).toBe(1);
  });
});
