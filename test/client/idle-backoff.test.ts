import { describe, expect, it } from 'vitest';
import { IdleBackoff } from '../../src/client/consumer/idle-backoff.js';
import type { PushChannel } from '../../src/client/consumer/push-channel.js';
import { TopicPartitionState } from '../../src/client/consumer/subscription-state.js';

describe('idle back-off (no push connection)', () => {
  const config = { fetchMaxWaitMs: 500, fetchIdleBackoffMaxMs: 4000, pushFallbackPollMs: 30_000 };

  it('doubles from fetch.max.wait.ms up to fetchIdleBackoffMaxMs over consecutive empty answers, and resets on data', () => {
    const idle = new IdleBackoff(config, undefined);
    const s = new TopicPartitionState('t', 0);
    const delays = () => Array.from({ length: 6 }, () => idle.onEmpty(s, 1_000_000, 7) - 1_000_000);
    expect(delays()).toEqual([500, 1000, 2000, 4000, 4000, 4000]);
    idle.onData(s);
    expect(delays()).toEqual([500, 1000, 2000, 4000, 4000, 4000]);
    expect(idle.maxWaitMs()).toBe(500); // a long poll, as Kafka's fetch.max.wait.ms
  });

  it('keeps one count per partition', () => {
    const idle = new IdleBackoff(config, undefined);
    const a = new TopicPartitionState('t', 0);
    const b = new TopicPartitionState('t', 1);
    idle.onEmpty(a, 0, 0);
    idle.onEmpty(a, 0, 0);
    expect(idle.onEmpty(b, 0, 0)).toBe(500);
    expect(idle.onEmpty(a, 0, 0)).toBe(2000);
  });

  it('fetchIdleBackoffMaxMs = fetchMaxWaitMs turns it off (a new long poll as soon as one ends)', () => {
    const idle = new IdleBackoff({ ...config, fetchIdleBackoffMaxMs: 500 }, undefined);
    const s = new TopicPartitionState('t', 0);
    expect(Array.from({ length: 4 }, () => idle.onEmpty(s, 0, 0))).toEqual([500, 500, 500, 500]);
  });
});

describe('idle back-off with a push connection', () => {
  const config = { fetchMaxWaitMs: 500, fetchIdleBackoffMaxMs: 4000, pushFallbackPollMs: 30_000 };
  /** A connected channel as the back-off sees it: it records the arms. */
  const channel = () => {
    const armed: string[] = [];
    const push = {
      connected: true,
      arm: (t: string, p: number, o: number) => armed.push(`${t}/${p}@${o}`),
      disarm: () => {},
    } as unknown as PushChannel;
    return { push, armed };
  };

  it('arms the partition, asks for no server wait, and gives the partitions that went idle together one fallback deadline', () => {
    const { push, armed } = channel();
    const idle = new IdleBackoff(config, push);
    const states = Array.from({ length: 12 }, (_, p) => new TopicPartitionState('t', p));
    const now = Date.now();
    const deadlines = states.map((s) => idle.onEmpty(s, now, 5));
    expect(armed).toHaveLength(12);
    expect(idle.maxWaitMs()).toBe(0);
    // One deadline for all twelve: their fallback is one multi-partition fetch, not twelve.
    expect(new Set(deadlines).size).toBe(1);
    expect(deadlines[0]! - now).toBeGreaterThanOrEqual(0.9 * 30_000 - 50);
    expect(deadlines[0]! - now).toBeLessThanOrEqual(1.1 * 30_000 + 50);
  });
});
