import { describe, expect, it } from 'vitest';
import { LambdaFunction } from '../../bench/aws-lambda.js';
import { chainStorageMs, requestTrace } from '../../bench/aws-storage.js';
import { sampleMs } from '../../bench/latency-profiles.js';

describe('bench:aws latency draws', () => {
  it('have the profile p50 and p99', () => {
    let seed = 1;
    // A fixed linear congruential sequence, so the check cannot flake.
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const draws = Array.from({ length: 20_000 }, () => sampleMs({ p50Ms: 25, p99Ms: 150 }, random)).sort(
      (a, b) => a - b,
    );
    expect(draws[10_000]).toBeGreaterThan(23);
    expect(draws[10_000]).toBeLessThan(27);
    expect(draws[19_800]).toBeGreaterThan(130);
    expect(draws[19_800]).toBeLessThan(170);
  });
});

describe('bench:aws Lambda model', () => {
  const slow = (ms: number) => async () => {
    await new Promise((r) => setTimeout(r, ms));
    return new Response('ok');
  };

  it('serves one request per environment, starts environments cold up to the limit, then queues', async () => {
    const fn = new LambdaFunction({ name: 'produce', concurrency: 2, coldStartMs: 20, memoryMb: 1024 });
    const req = () => new Request('http://x/records', { method: 'POST' });
    const answers = await Promise.all([1, 2, 3].map(() => fn.invoke(req(), slow(30), 'produce')));
    expect(await Promise.all(answers.map((a) => a.text()))).toEqual(['ok', 'ok', 'ok']);
    expect(fn.figures).toMatchObject({ invocations: 3, coldStarts: 2, throttled: 1, peakConcurrency: 2 });
    // Two cold starts (20 + 30 ms each) and one warm request (30 ms) at 1 GB: at least 0.13 GB-s.
    expect(fn.figures.gbSeconds).toBeGreaterThanOrEqual(0.13);
    await fn.invoke(req(), slow(1), 'produce');
    expect(fn.figures.coldStarts).toBe(2);
  });

  it("makes an environment's process state on its cold start and keeps it for its warm invocations", async () => {
    let made = 0;
    const fn = new LambdaFunction({
      name: 'produce',
      concurrency: 2,
      coldStartMs: 0,
      memoryMb: 1024,
      environment: () => ({ id: ++made }),
    });
    const served = (ms: number) => async (_req: Request, environment: { id: number }) => {
      await new Promise((r) => setTimeout(r, ms));
      return new Response(String(environment.id));
    };
    const req = () => new Request('http://x/records', { method: 'POST' });
    // Two at once: two environments, each made once; a third waits for one and runs in it.
    const answers = await Promise.all([30, 30, 1].map((ms) => fn.invoke(req(), served(ms), 'produce')));
    const ids = await Promise.all(answers.map((a) => a.text()));
    expect(new Set(ids.slice(0, 2))).toEqual(new Set(['1', '2']));
    expect(['1', '2']).toContain(ids[2]);
    // Warm invocations, one at a time, run in the environments made already.
    for (let i = 0; i < 3; i++)
      expect(['1', '2']).toContain(await (await fn.invoke(req(), served(1), 'produce')).text());
    expect(made).toBe(2);
    expect(fn.figures.coldStarts).toBe(2);
  });

  it('keeps each request trace, with the calls made inside it', async () => {
    const fn = new LambdaFunction({ name: 'produce', concurrency: 1, coldStartMs: 0, memoryMb: 1024 });
    await fn.invoke(
      new Request('http://x/'),
      async () => {
        requestTrace.getStore()?.calls.push({ op: 'PutObject', startMs: 1, endMs: 2, drawnMs: 1 });
        return new Response(null, { status: 204 });
      },
      'produce',
    );
    expect(fn.traces).toHaveLength(1);
    expect(fn.traces[0]).toMatchObject({ status: 204, calls: [{ op: 'PutObject' }] });
  });

  it("counts a request's critical path as the drawn times of the calls its answer waited on, in a chain", () => {
    // State read beside the PUT, then two writes side by side, each answered a little late; CPU in between.
    const calls = [
      { op: 'GetItem', startMs: 10, endMs: 16, drawnMs: 5 },
      { op: 'PutObject', startMs: 10, endMs: 42, drawnMs: 30 },
      { op: 'UpdateItem', startMs: 50, endMs: 58, drawnMs: 7 },
      { op: 'UpdateItem', startMs: 50, endMs: 61, drawnMs: 9 },
    ];
    // The chain: the later write (9 ms drawn), then the PUT (30): 39 ms of storage in a 70 ms request.
    expect(chainStorageMs({ durationMs: 70, calls })).toBe(39);
    expect(chainStorageMs({ durationMs: 5, calls: [] })).toBe(0);
  });
});
