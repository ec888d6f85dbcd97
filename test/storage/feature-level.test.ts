/**
 * The cluster feature level (src/storage/feature-level.ts): absent is level 1; raised only upwards,
 * only to a level this code and every registered process support, by the explicit step or by the
 * scheduler after every process has agreed for the grace period; shown by the features route.
 */
import { describe, expect, it } from 'vitest';
import {
  AUTO_RAISE_GRACE_MS,
  autoRaiseFeatureLevel,
  initializeFeatureLevel,
  raiseFeatureLevel,
  readFeatureLevel,
  registerProcess,
  REGISTRATION_TTL_MS,
} from '../../src/storage/feature-level.js';
import { SUPPORTED_FEATURE_LEVEL } from '../../src/storage/formats.js';
import { MemoryMetadataStore } from '../../src/storage/memory-metadata-store.js';
import { RELEASE } from '../../src/wire/release.js';
import { testApp } from '../support/test-app.js';

const T0 = 1_800_000_000_000;
const proc = (id: string, supportedLevel: number, seenAt = T0) => ({
  id,
  release: `r-${supportedLevel}`,
  supportedLevel,
  role: 'http',
  seenAt,
});

/** A store as v0.1.0 leaves it: data (a topic), and no feature level item. */
async function v010Store() {
  const m = new MemoryMetadataStore();
  await m.put('cluster', 'topic#legacy', { name: 'legacy' });
  return m;
}

describe('the feature level', () => {
  it('starts a new cluster at the newest level, by its first topic or the scheduler; a store with data stays at 1', async () => {
    const fresh = new MemoryMetadataStore();
    await registerProcess(fresh, proc('a', 3));
    expect(await initializeFeatureLevel(fresh, T0, 3)).toBe(3);
    expect(await readFeatureLevel(fresh)).toBe(3);
    const scheduled = new MemoryMetadataStore();
    await registerProcess(scheduled, proc('a', 3));
    expect(await autoRaiseFeatureLevel(scheduled, T0, AUTO_RAISE_GRACE_MS, 3)).toBeUndefined();
    expect(await readFeatureLevel(scheduled)).toBe(3);
    const old = await v010Store();
    expect(await initializeFeatureLevel(old, T0, 3)).toBe(1);
    expect(await old.get('cluster', 'feature-level')).toBeUndefined();
  });

  it('is 1 where none was ever written (every v0.1.0 cluster)', async () => {
    expect(await readFeatureLevel(new MemoryMetadataStore())).toBe(1);
  });

  it('is raised by the explicit step only upwards and only to what every process supports', async () => {
    const m = new MemoryMetadataStore();
    await registerProcess(m, proc('new', 3));
    await registerProcess(m, proc('old', 2));
    await expect(raiseFeatureLevel(m, 4, T0, 'User:ops', 3)).rejects.toThrow(
      /unknown to this code, which supports up to 3/,
    );
    await expect(raiseFeatureLevel(m, 3, T0, 'User:ops', 3)).rejects.toThrow(
      /not supported by 1 active process\(es\) \(http r-2 up to level 2\)/,
    );
    expect(await readFeatureLevel(m)).toBe(1);
    const status = await raiseFeatureLevel(m, 2, T0, 'User:ops', 3);
    expect(status).toMatchObject({ level: 2, supported: 3, finalizable: 2, raisedBy: 'User:ops', raisedAt: T0 });
    await expect(raiseFeatureLevel(m, 1, T0, 'User:ops', 3)).rejects.toThrow(/cannot go down to 1/);
    expect((await raiseFeatureLevel(m, 2, T0 + 1, 'User:other', 3)).raisedBy).toBe('User:ops'); // no-op
    // The old process is gone (its registration lapsed): 3 may follow.
    expect((await raiseFeatureLevel(m, 3, T0 + REGISTRATION_TTL_MS, 'User:ops', 3)).level).toBe(3);
  });

  it('is raised by the scheduler once every process has agreed for the grace period', async () => {
    const m = await v010Store();
    await registerProcess(m, proc('a', 2));
    await registerProcess(m, proc('b', 1));
    expect(await autoRaiseFeatureLevel(m, T0, AUTO_RAISE_GRACE_MS, 2)).toBeUndefined();
    expect(await autoRaiseFeatureLevel(m, T0 + AUTO_RAISE_GRACE_MS / 2, AUTO_RAISE_GRACE_MS, 2)).toBeUndefined();
    expect(await readFeatureLevel(m)).toBe(1);
    // b is replaced by new code: agreement starts now, and the raise comes a grace period later.
    const t1 = T0 + AUTO_RAISE_GRACE_MS / 2 + 10_000;
    await registerProcess(m, proc('b', 2, t1));
    await registerProcess(m, proc('a', 2, t1));
    expect(await autoRaiseFeatureLevel(m, t1, AUTO_RAISE_GRACE_MS, 2)).toBeUndefined();
    expect(await autoRaiseFeatureLevel(m, t1 + AUTO_RAISE_GRACE_MS - 1, AUTO_RAISE_GRACE_MS, 2)).toBeUndefined();
    expect(await readFeatureLevel(m)).toBe(1);
    expect(await autoRaiseFeatureLevel(m, t1 + AUTO_RAISE_GRACE_MS, AUTO_RAISE_GRACE_MS, 2)).toBe(2);
    expect(await readFeatureLevel(m)).toBe(2);
  });

  it('forgets a pending raise when a process that does not support it shows up', async () => {
    const m = await v010Store();
    await registerProcess(m, proc('a', 2));
    expect(await autoRaiseFeatureLevel(m, T0, AUTO_RAISE_GRACE_MS, 2)).toBeUndefined();
    await registerProcess(m, proc('rolled-back', 1, T0 + 1000));
    expect(await autoRaiseFeatureLevel(m, T0 + 1000, AUTO_RAISE_GRACE_MS, 2)).toBeUndefined();
    await registerProcess(m, proc('rolled-back', 2, T0 + 2000));
    expect(await autoRaiseFeatureLevel(m, T0 + 2000, AUTO_RAISE_GRACE_MS, 2)).toBeUndefined();
    // Agreement starts again from here, not from T0.
    expect(await autoRaiseFeatureLevel(m, T0 + AUTO_RAISE_GRACE_MS + 1500, AUTO_RAISE_GRACE_MS, 2)).toBeUndefined();
    expect(await autoRaiseFeatureLevel(m, T0 + AUTO_RAISE_GRACE_MS + 2000, AUTO_RAISE_GRACE_MS, 2)).toBe(2);
  });

  it('is shown and raised through the features route, and the cluster names its release', async () => {
    const t = testApp();
    await t.services.features.register('test', t.services.clock.now());
    const shown = await t.call('GET', 'features');
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({
      kind: 'KafkaFeatureLevel',
      release: RELEASE,
      feature_level: 1,
      supported_feature_level: SUPPORTED_FEATURE_LEVEL,
      finalizable_feature_level: SUPPORTED_FEATURE_LEVEL,
      processes: [{ role: 'test', release: RELEASE, supported_feature_level: SUPPORTED_FEATURE_LEVEL }],
    });
    const refused = await t.call('POST', 'features:raise', { feature_level: SUPPORTED_FEATURE_LEVEL + 1 });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('INVALID_REQUEST');
    expect(refused.body.message).toContain(`supports up to ${SUPPORTED_FEATURE_LEVEL}`);
    const raised = await t.call('POST', 'features:raise', { feature_level: SUPPORTED_FEATURE_LEVEL });
    expect(raised.status).toBe(200);
    expect(raised.body.feature_level).toBe(SUPPORTED_FEATURE_LEVEL);
    const cluster = await t.call('GET', '/v3/clusters/local');
    expect(cluster.body.version).toBe(RELEASE);
  });
});
