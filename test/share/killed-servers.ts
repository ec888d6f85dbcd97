/**
 * The share group's promise when the servers die, run on a backend several server processes share
 * (killed-servers.test.ts: files + SQLite; killed-servers-aws.test.ts: the S3 and DynamoDB adapters
 * on emulators). Three `src/server.ts` processes serve one share group to many HTTP workers, while a
 * loop SIGKILLs a server at random moments and restarts it on its port. A worker treats a request
 * that got no answer as unknown: a receive's records may be locked for nobody it knows, an
 * acknowledgement may or may not have applied (it is sent again, naming its delivery). The checker
 * (ShareChecker, ./support.ts) sees every answer; in the end every record is accepted or archived
 * and every share-partition is at its high watermark.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalServer } from '../support/local-server.js';
import { stopServer } from '../support/local-server.js';
import { BASE } from '../support/test-app.js';
import { until } from '../support/until.js';
import { type DeliveryAnswer, expectFinished, ShareChecker } from './support.js';

const SERVERS = 3;
const WORKERS = 8;
const PARTITIONS = 3;
const PER_PARTITION = 30;
const KILLS = 3;
const MAX_KILLS = 6;
/** Kafka's lowest group.share.record.lock.duration.ms: locks lost with a killed server come back after it. */
const LOCK_MS = 15_000;
/**
 * Bounds only. The kills are made within KILL_WINDOW_MS (a restart takes seconds, many on a loaded
 * machine, and one server at least stays up, so a kill may wait for one); the workers stop once the
 * group has nothing left, at most AFTER_KILLS_MS after the last kill (lost locks end after LOCK_MS).
 */
const KILL_WINDOW_MS = 60_000;
const AFTER_KILLS_MS = 40_000;

/** Where the servers keep their data, and how one is started on it. */
export interface KilledServersBackend {
  name: string;
  setup(): Promise<void>;
  /** Starts server `index` on `port` (0: any). */
  start(index: number, port: number): Promise<LocalServer>;
  /**
   * Holds the answer of server `index`'s next conditional write of a share-partition once it has
   * applied; resolves true once one is held (false if none came within the bound), and `release`
   * lets it go. Absent where the store is in the server's process (SQLite).
   */
  holdWrite?(index: number): { held: Promise<boolean>; release(): void };
  /** What the backend injected, for the log line; checked by `expectInjected`. */
  injected?(): string;
  expectInjected?(): void;
  teardown(): Promise<void>;
}

export function describeKilledServers(backend: KilledServersBackend): void {
  describe(`share group workers over servers that are SIGKILLed (${backend.name})`, () => {
    const servers: (LocalServer | undefined)[] = [];
    /** Workers' requests sent to each server and not yet answered: the killer picks a server with some. */
    const inFlight = Array.from({ length: SERVERS }, () => 0);

    const call = async (server: number, method: string, path: string, body?: unknown) => {
      const s = servers[server];
      if (!s) throw new Error(`server ${server} is down`);
      const share = path.startsWith('share-groups/workers/records:');
      if (share) inFlight[server]!++;
      try {
        const res = await fetch(`${s.origin}${BASE}/${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
          // A bound only: a SIGKILL closes the connection, so a request to a killed server fails at once.
          signal: AbortSignal.timeout(20_000),
        });
        const text = await res.text();
        return { status: res.status, body: text ? JSON.parse(text) : undefined };
      } finally {
        if (share) inFlight[server]!--;
      }
    };

    /**
     * A server up, trying a few times: a port just freed may be taken in between, and a start on a
     * machine loaded past its cores may miss the start's bound (test/support/local-server.ts).
     */
    const start = async (i: number, port: number): Promise<LocalServer> => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await backend.start(i, port);
        } catch (e) {
          if (attempt >= 3) throw e;
          await new Promise((r) => setTimeout(r, 300));
        }
      }
    };

    beforeAll(async () => {
      await backend.setup();
      for (const [i, s] of (await Promise.all(Array.from({ length: SERVERS }, (_, i) => start(i, 0)))).entries())
        servers[i] = s;
      expect((await call(0, 'POST', 'topics', { topic_name: 'work', partitions_count: PARTITIONS })).status).toBe(201);
      for (let p = 0; p < PARTITIONS; p++) {
        const res = await call(0, 'POST', 'topics/work/records:batch', {
          entries: Array.from({ length: PER_PARTITION }, (_, i) => ({
            id: i,
            partition_id: p,
            value: { type: 'STRING', data: `${p}-${i}` },
          })),
        });
        expect(res.body.failures).toEqual([]);
      }
      // Before any share request, so that no server has the defaults cached.
      for (const [name, value] of [
        ['share.auto.offset.reset', 'earliest'],
        ['share.record.lock.duration.ms', String(LOCK_MS)],
        ['share.delivery.count.limit', '10'],
      ])
        expect((await call(0, 'PUT', `share-groups/workers/configs/${name}`, { value })).status).toBe(204);
    }, 90_000);

    afterAll(async () => {
      await Promise.all(servers.map((s) => stopServer(s)));
      await backend.teardown();
    });

    it(
      'never gives a locked record to two workers, accepts each once, and finishes every record',
      async () => {
        let seed = 49;
        const random = () => {
          seed = (seed * 1103515245 + 12345) % 2 ** 31;
          return seed / 2 ** 31;
        };
        const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
        const checker = new ShareChecker(LOCK_MS);
        const unknown = { receives: 0, acks: 0 };
        let kills = 0;
        /** Kills of a server whose conditional write had applied and whose answer had not reached it. */
        let midWrite = 0;
        let done = false;
        let workEnd = Number.POSITIVE_INFINITY;

        /** A server that is up (one at least always is). */
        const anyServer = () => {
          const up = servers.flatMap((s, i) => (s ? [i] : []));
          return up[Math.floor(random() * up.length)]!;
        };

        const worker = async (name: string) => {
          while (!done && Date.now() < workEnd) {
            let res: Awaited<ReturnType<typeof call>>;
            try {
              res = await call(anyServer(), 'POST', 'share-groups/workers/records:receive', {
                topics: ['work'],
                member_id: name,
                max_records: 5,
              });
            } catch {
              // No answer: the records may be locked for nobody this worker knows, until their locks end.
              unknown.receives++;
              await sleep(50);
              continue;
            }
            if (res.status !== 200) {
              await sleep(50);
              continue;
            }
            const got = res.body.data as DeliveryAnswer[];
            if (got.length === 0) {
              await sleep(100);
              continue;
            }
            const taken = got.map((r) => ({ r, d: checker.received(name, r) }));
            // Working on them: a kill lands between the receive and the acknowledgement as often as not.
            await sleep(random() * 200);
            const acks = taken.map(({ r, d }) => {
              const roll = random();
              const type = roll < 0.8 ? 'accept' : roll < 0.92 ? 'release' : 'reject';
              return { d, type, partition: r.partition_id, offset: r.offset };
            });
            // An acknowledgement whose answer was lost may have applied: sent again (to any server), it
            // names its delivery, so it can only answer for that one.
            for (let attempt = 0; attempt < 3; attempt++) {
              const sentAt = Date.now();
              for (const a of acks) if (a.type !== 'accept') checker.givenUp(a.d, sentAt);
              let ack: Awaited<ReturnType<typeof call>>;
              try {
                ack = await call(anyServer(), 'POST', 'share-groups/workers/records:acknowledge', {
                  member_id: name,
                  acknowledgements: acks.map((a) => ({
                    topic_name: 'work',
                    partition_id: a.partition,
                    offset: a.offset,
                    type: a.type,
                    delivery_count: a.d.count,
                  })),
                });
              } catch {
                unknown.acks++;
                await sleep(100);
                continue;
              }
              if (ack.status !== 200) {
                await sleep(100);
                continue;
              }
              (ack.body.data as { error: string | null }[]).forEach((r, i) => {
                if (r.error === null) checker.applied(acks[i]!.d, acks[i]!.type);
              });
              break;
            }
          }
        };

        // New records all through the kills, so that the workers are busy when a server dies however slow
        // the machine is. A batch whose answer was lost may or may not be in the log: the end checks
        // read the high watermarks.
        let killsDone = false;
        const started = Date.now();
        let killsDoneAt = 0;
        const producer = async () => {
          for (let batch = 0; batch < 150 && !killsDone && Date.now() < workEnd; batch++) {
            await call(anyServer(), 'POST', 'topics/work/records:batch', {
              entries: Array.from({ length: PARTITIONS }, (_, p) => ({
                id: p,
                partition_id: p,
                value: { type: 'STRING', data: `${p}-b${batch}` },
              })),
            }).catch(() => {});
            await sleep(100);
          }
        };

        // SIGKILL a server at a random moment, one that has workers' requests in flight (so that it dies
        // between two steps of some worker), and restart it on its port a moment later; the next kill
        // does not wait for the restart (a start takes seconds on a loaded machine), but one server at
        // least stays up. KILLS times, and more (up to MAX_KILLS) until some worker's request got no
        // answer and, where the store is reached over the network, until a server died between a
        // conditional write that applied and its answer (every other kill waits for one to be held).
        const restart = async (i: number, port: number) => {
          await sleep(200 + random() * 600);
          servers[i] = await start(i, port);
        };
        const victim = async (): Promise<number | undefined> => {
          const up = () => servers.flatMap((s, i) => (s ? [i] : []));
          const busy = () => up().filter((i) => inFlight[i]! > 0);
          // A bound only: with eight workers some server is busy within moments; else any will do.
          await until('a server with requests in flight', () => up().length >= 2 && busy().length > 0, 2_000).catch(
            () => {},
          );
          if (up().length < 2) return undefined;
          const from = busy().length > 0 ? busy() : up();
          return from[Math.floor(random() * from.length)]!;
        };
        const more = () => unknown.receives + unknown.acks === 0 || (backend.holdWrite !== undefined && midWrite === 0);
        const killer = async () => {
          const restarts: Promise<void>[] = [];
          while (kills < MAX_KILLS && (kills < KILLS || more()) && Date.now() < started + KILL_WINDOW_MS) {
            await sleep(300 + random() * 1200);
            const i = await victim();
            if (i === undefined) continue;
            const hold = kills % 2 === 0 ? backend.holdWrite?.(i) : undefined;
            if (hold && (await hold.held)) midWrite++;
            const s = servers[i]!;
            servers[i] = undefined;
            await stopServer(s, 'SIGKILL');
            hold?.release();
            kills++;
            restarts.push(restart(i, s.port));
          }
          // Done killing: the servers still starting come up while the workers finish (awaited below).
          killsDone = true;
          killsDoneAt = Date.now() - started;
          workEnd = Date.now() + AFTER_KILLS_MS;
          return restarts;
        };

        // Done once the group has nothing left to deliver; asked of any server that is up.
        const watcher = async () => {
          while (!done && Date.now() < workEnd) {
            await sleep(500);
            try {
              const d = (await call(anyServer(), 'GET', 'share-groups/workers')).body;
              if (killsDone && d.lag === 0 && d.partitions.length === PARTITIONS) done = true;
            } catch {
              // killed under it: ask again
            }
          }
          done = true;
        };

        const [restarts] = await Promise.all([
          killer(),
          producer(),
          watcher(),
          ...Array.from({ length: WORKERS }, (_, i) => worker(`w${i}`)),
        ]);
        await Promise.all(restarts);

        console.log(
          `killed servers (${backend.name}): ${kills} kills (${midWrite} between a write and its answer), ` +
            `${unknown.receives} receives and ${unknown.acks} acknowledgements unanswered, ` +
            `${checker.accepted.size} accepted, ${checker.rejected.size} rejected, ${checker.deliveryTotal} deliveries` +
            `${backend.injected ? `, ${backend.injected()}` : ''}; ` +
            `kills done after ${killsDoneAt} ms, work after ${Date.now() - started} ms`,
        );

        expect(checker.violations()).toEqual([]);
        // The run did what it says: servers died under the workers and left outcomes unknown.
        expect(kills).toBeGreaterThanOrEqual(KILLS);
        expect(unknown.receives + unknown.acks).toBeGreaterThan(0);
        if (backend.holdWrite) expect(midWrite).toBeGreaterThan(0);
        backend.expectInjected?.();
        // Every record accepted or archived, every share-partition at its end.
        const up = servers.findIndex((s) => s !== undefined);
        const records = expectFinished((await call(up, 'GET', 'share-groups/workers')).body, PARTITIONS);
        // Each was delivered to a worker that saw it: an accept needs one, and an archive by the
        // delivery count limit would need ten deliveries, far more lost locks than this run has time for.
        expect(checker.deliveries.size).toBe(records);
      },
      KILL_WINDOW_MS + AFTER_KILLS_MS + 30_000,
    );
  });
}
