/**
 * Several changes of a share group's configs are one conditional write of its config item: all
 * are stored or none, whatever happens to that write (it fails before taking effect, takes effect
 * and then fails, or takes effect and is sent again by the SDK, with or without another writer's
 * change in between). On every backend, through the fault-injecting metadata store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARE_GROUP_CONFIG_SK, shareGroupPk } from '../../src/storage/key-layout.js';
import { observeStorage } from '../../src/storage/observed-stores.js';
import { allBackends } from '../support/backends.js';
import { FaultyMetadataStore, InjectedFault } from '../support/fault-injection.js';
import { testApp } from '../support/test-app.js';
import { manualClock } from './support.js';

const LOCK = 'share.record.lock.duration.ms';
const LIMIT = 'share.delivery.count.limit';
const RESET = 'share.auto.offset.reset';
const ISOLATION = 'share.isolation.level';
/** Three changes: two overrides set, one reset to its default. */
const CHANGES = [
  { name: LOCK, value: '15000' },
  { name: LIMIT, value: '3' },
  { name: RESET, value: null },
];

for (const backend of allBackends) {
  describe(`a share group's config changes together on ${backend.name}`, () => {
    let stop: () => Promise<void>;
    let metadata: FaultyMetadataStore;
    let app: ReturnType<typeof testApp>;
    /** Writes of each group's config item (conditional puts, failed or not). */
    const configWrites = new Map<string, number>();
    const configKey = (group: string) => `${shareGroupPk(group)}|${SHARE_GROUP_CONFIG_SK}`;
    const isConfig = (group: string) => (key: string) => key === configKey(group);

    beforeAll(async () => {
      const started = await backend.start();
      stop = started.stop;
      metadata = new FaultyMetadataStore(started.storage.metadata);
      const storage = observeStorage({ ...started.storage, metadata }, (c) => {
        if (c.op === 'UpdateItem' && c.sk === SHARE_GROUP_CONFIG_SK)
          configWrites.set(c.pk, (configWrites.get(c.pk) ?? 0) + 1);
      });
      app = testApp({ storage, clock: manualClock() });
    }, 60_000);
    afterAll(() => stop?.());

    /** The overrides as stored (described from the item), by name. */
    const overrides = async (group: string) =>
      Object.fromEntries(
        (await app.services.share.describeConfigs(group)).filter((c) => !c.isDefault).map((c) => [c.name, c.value]),
      );
    /** Each group starts with share.auto.offset.reset overridden, so that a reset is a change too. */
    const withReset = async (group: string) => {
      await app.services.share.alterConfigs(group, [{ name: RESET, value: 'earliest' }]);
      expect(await overrides(group)).toEqual({ [RESET]: 'earliest' });
      configWrites.clear();
    };
    const ALL = { [LOCK]: '15000', [LIMIT]: '3' };
    const NONE = { [RESET]: 'earliest' };

    it('stores several changes of one call in one write (configs:alter)', async () => {
      await withReset('together');
      const res = await app.call('POST', 'share-groups/together/configs:alter', {
        data: [
          { name: LOCK, value: '15000' },
          { name: LIMIT, value: '3', operation: 'SET' },
          { name: RESET, operation: 'DELETE' },
        ],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(204);
      expect(await overrides('together')).toEqual(ALL);
      expect(configWrites.get(shareGroupPk('together'))).toBe(1);
      const used = await app.services.share.config('together');
      expect([used.recordLockDurationMs, used.deliveryCountLimit, used.autoOffsetReset]).toEqual([15_000, 3, 'latest']);
    });

    it('stores none of them when one is bad, or when only validated', async () => {
      await withReset('checked');
      const bad = await app.call('POST', 'share-groups/checked/configs:alter', {
        data: [
          { name: LOCK, value: '15000' },
          { name: LIMIT, value: '99' },
        ],
      });
      expect(bad).toMatchObject({ status: 400, body: { error: 'INVALID_CONFIG' } });
      const unknown = await app.call('POST', 'share-groups/checked/configs:alter', {
        data: [
          { name: LOCK, value: '15000' },
          { name: 'no.such.config', value: '1' },
        ],
      });
      expect(unknown).toMatchObject({ status: 400, body: { error: 'INVALID_CONFIG' } });
      const dry = await app.call('POST', 'share-groups/checked/configs:alter', {
        data: [{ name: LOCK, value: '15000' }],
        validate_only: true,
      });
      expect(dry.status).toBe(204);
      expect(await overrides('checked')).toEqual(NONE);
      expect(configWrites.get(shareGroupPk('checked'))).toBeUndefined();
    });

    it('stores none when the write fails before taking effect', async () => {
      await withReset('failed');
      metadata.faults.fail('put', { when: 'before', match: isConfig('failed') });
      await expect(app.services.share.alterConfigs('failed', CHANGES)).rejects.toBeInstanceOf(InjectedFault);
      expect(await overrides('failed')).toEqual(NONE);
    });

    it('stores all when the write takes effect and its answer is lost', async () => {
      await withReset('lost');
      metadata.faults.fail('put', { when: 'after', match: isConfig('lost') });
      await expect(app.services.share.alterConfigs('lost', CHANGES)).rejects.toBeInstanceOf(InjectedFault);
      expect(await overrides('lost')).toEqual(ALL);
      // This process does not go on using what it read before the change.
      expect((await app.services.share.config('lost')).deliveryCountLimit).toBe(3);
    });

    it('answers a write the SDK sent again after it applied as applied, all stored once', async () => {
      await withReset('retried');
      metadata.faults.fail('put', { when: 'retried', match: isConfig('retried') });
      await app.services.share.alterConfigs('retried', CHANGES);
      expect(metadata.faults.injected).toBeGreaterThan(0);
      expect(await overrides('retried')).toEqual(ALL);
    });

    it('applies all again over another change made between a write and its repeat', async () => {
      await withReset('between');
      metadata.faults.fail('put', {
        when: 'retried',
        match: isConfig('between'),
        // Another process sets the isolation level after our write and before the SDK's repeat:
        // the repeat fails its condition against an item that is not our write.
        between: () => app.services.share.alterConfigs('between', [{ name: ISOLATION, value: 'read_committed' }]),
      });
      await app.services.share.alterConfigs('between', CHANGES);
      expect(await overrides('between')).toEqual({ ...ALL, [ISOLATION]: 'read_committed' });
    });
  });
}
