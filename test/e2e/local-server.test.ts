import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer as startLocalServer, tempDir, type LocalServer } from '../support/local-server.js';

/** Starts `src/server.ts` as `npm start` would; `url` is its cluster's REST base. */
async function startServer(dataDir: string): Promise<{ proc: LocalServer['proc']; url: string }> {
  const { proc, origin } = await startLocalServer(dataDir);
  return { proc, url: `${origin}/v3/clusters/local` };
}

const send = async (method: string, url: string, body?: unknown) => {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
};

describe('local server (npm start) over HTTP', () => {
  let dataDir: { path: string; remove: () => Promise<void> };
  let server: { proc: LocalServer['proc']; url: string } | undefined;

  beforeAll(async () => {
    dataDir = await tempDir('log-e2e-');
  });
  afterAll(async () => {
    server?.proc.kill('SIGKILL');
    await dataDir.remove();
  });

  it('keeps every acknowledged record across a SIGKILL mid-load and a restart', async () => {
    server = await startServer(dataDir.path);
    expect((await send('POST', `${server.url}/topics`, { topic_name: 'durable', partitions_count: 3 })).status).toBe(
      201,
    );

    const acked = new Map<string, { partition: number; offset: number }>();
    let stop = false;
    const producer = async (id: number) => {
      for (let round = 0; !stop; round++) {
        const entries = Array.from({ length: 50 }, (_, i) => ({
          id: `${id}-${round}-${i}`,
          key: { type: 'STRING', data: `k${i}` },
          value: { type: 'STRING', data: `${id}-${round}-${i}` },
        }));
        try {
          const res = await send('POST', `${server!.url}/topics/durable/records:batch`, { entries });
          for (const s of res.body.successes) acked.set(s.id, { partition: s.partition_id, offset: s.offset });
        } catch {
          return; // the connection died with the server: this request was never acknowledged
        }
      }
    };
    const load = Promise.all([0, 1, 2, 3].map(producer));
    while (acked.size < 2000) await new Promise((r) => setTimeout(r, 20));
    server.proc.kill('SIGKILL');
    stop = true;
    await load;
    expect(acked.size).toBeGreaterThanOrEqual(2000);

    server = await startServer(dataDir.path);
    const seen = new Map<string, { partition: number; offset: number }>();
    for (let p = 0; p < 3; p++) {
      let offset = 0;
      for (;;) {
        const res = await send(
          'GET',
          `${server.url}/topics/durable/partitions/${p}/records?offset=${offset}&format=string`,
        );
        expect(res.status).toBe(200);
        for (const r of res.body.records) {
          expect(seen.has(r.value.data)).toBe(false); // exactly once
          seen.set(r.value.data, { partition: p, offset: r.offset });
        }
        if (res.body.next_offset >= res.body.high_watermark) break;
        offset = res.body.next_offset;
      }
    }
    for (const [value, where] of acked) expect(seen.get(value)).toEqual(where);

    // The restarted server keeps appending after the surviving offsets.
    const after = await send('POST', `${server.url}/topics/durable/records`, {
      partition_id: 0,
      value: { type: 'STRING', data: 'after' },
    });
    const hw0 = [...seen.values()].filter((s) => s.partition === 0).length;
    expect(after.body.offset).toBeGreaterThanOrEqual(hw0);
  }, 60_000);
});
