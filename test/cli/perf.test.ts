import { describe, expect, it } from 'vitest';
import { sendPause, Stats } from '../../src/cli/perf.js';

describe('perf produce pacing', () => {
  it('sleeps while ahead of --throughput', () => {
    // 1000 records/s from t=0: record 9 is due at 10 ms; at 4 ms the loop is 6 ms early.
    expect(sendPause(9, 1000, 0, 4)).toBe(6);
  });

  it('still yields every 1024 records while behind the rate, as with no cap', () => {
    const behind = (i: number) => sendPause(i, 1000, 0, 60_000);
    const uncapped = (i: number) => sendPause(i, -1, 0, 60_000);
    for (const pace of [behind, uncapped]) {
      const yields = Array.from({ length: 4096 }, (_, i) => i).filter((i) => pace(i) === 'yield');
      expect(yields).toEqual([1023, 2047, 3071, 4095]);
      expect(pace(1022)).toBe(0);
    }
  });
});

describe('perf latency percentiles', () => {
  it('keep at most 500,000 samples, every n-th record as Kafka does, and stay right', () => {
    const stats = new Stats('sent', () => {}, 1_500_000);
    // Latencies 0..999 ms, repeating: every third record is sampled, and the spread is the same.
    for (let i = 0; i < 1_500_000; i++) stats.record(i % 1000, 1);
    const line = stats.summary(1000);
    expect(line).toMatch(/^1500000 records sent, .* 500 ms 50th, 950 ms 95th, 990 ms 99th, 999 ms 99\.9th\.$/);
    expect((stats as unknown as { sampled: number }).sampled).toBe(500_000);
  });
});
