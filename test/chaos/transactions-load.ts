/**
 * A transactional producer in the workload: transactions of 1-3 records over the partitions of one
 * topic, every fourth aborted (the second, sixth, ...), each with its own values (`tx|<n>|<i>`). Its check reads the topic
 * read_committed: every record of a committed transaction exactly once, none of an aborted one,
 * and those of a transaction whose end is unknown (an error) at most once.
 */
import { Kafka, type Producer } from '../../src/client/index.js';
import { roundRobin, sleep } from './producers.js';
import type { Rng } from './rng.js';

export interface TransactionFindings {
  committed: number;
  aborted: number;
  unknown: number;
  /** Counterexamples: a committed record missing or seen twice, an aborted one seen. */
  lostCommitted: string[];
  duplicated: string[];
  abortedVisible: string[];
}

interface Txn {
  values: string[];
  outcome: 'committed' | 'aborted' | 'unknown';
}

export function startTransactions(options: {
  topic: string;
  partitions: number;
  transactionalId: string;
  servers: () => string[];
  clusterId: string;
  rng: Rng;
}): { stop(): Promise<void>; check(origin: string): Promise<TransactionFindings> } {
  const txns: Txn[] = [];
  let stopping = false;
  const next = roundRobin(options.servers);
  const kafka = new Kafka({
    url: `http://127.0.0.1:1/v3/clusters/${options.clusterId}`,
    format: 'record-batch',
    requestTimeoutMs: 10_000,
    fetch: (input, init) => {
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      const origin = new URL(next());
      url.protocol = origin.protocol;
      url.host = origin.host;
      return fetch(url, init);
    },
  });
  const loop = async () => {
    let producer: Producer | undefined;
    for (let n = 0; !stopping; n++) {
      producer ??= kafka.producer({ transactionalId: options.transactionalId, lingerMs: 0, retryBackoffMs: 50 });
      const txn: Txn = {
        values: Array.from({ length: options.rng.int(1, 3) }, (_, i) => `tx|${n}|${i}`),
        outcome: 'unknown',
      };
      txns.push(txn);
      try {
        const t = await producer.transaction();
        for (const value of txn.values)
          await t.send({
            topic: options.topic,
            messages: [{ partition: options.rng.int(0, options.partitions - 1), value }],
          });
        if (n % 4 === 1) {
          await t.abort();
          txn.outcome = 'aborted';
        } else {
          await t.commit();
          txn.outcome = 'committed';
        }
      } catch {
        // Its end is unknown; a new producer fences this one and ends what it left open.
        await producer.close({ timeoutMs: 500 }).catch(() => {});
        producer = undefined;
        await sleep(200);
      }
      await sleep(options.rng.int(20, 80));
    }
    await producer?.close({ timeoutMs: 1000 }).catch(() => {});
  };
  const running = loop();
  return {
    async stop() {
      // The check is of committed transactions: on a loaded machine the run's time may end before
      // one has. Called once faults are healed, it goes on until one commits (the bound only ends
      // a run that would fail).
      for (const bound = Date.now() + 60_000; !txns.some((t) => t.outcome === 'committed') && Date.now() < bound; )
        await sleep(100);
      stopping = true;
      await Promise.race([running, sleep(25_000)]);
    },
    async check(origin) {
      const seen = new Map<string, number>();
      for (let p = 0; p < options.partitions; p++) {
        let offset = 0;
        for (;;) {
          const res = await fetch(
            `${origin}/v3/clusters/${options.clusterId}/topics/${options.topic}/partitions/${p}/records?offset=${offset}&format=string&isolation_level=read_committed`,
          );
          if (res.status !== 200) throw new Error(`read ${options.topic}-${p}: ${res.status} ${await res.text()}`);
          const body = (await res.json()) as { records: { value: { data: string } | null }[]; next_offset: number };
          for (const r of body.records) if (r.value) seen.set(r.value.data, (seen.get(r.value.data) ?? 0) + 1);
          if (body.next_offset <= offset) break;
          offset = body.next_offset;
        }
      }
      const f: TransactionFindings = {
        committed: 0,
        aborted: 0,
        unknown: 0,
        lostCommitted: [],
        duplicated: [],
        abortedVisible: [],
      };
      for (const t of txns) {
        f[t.outcome]++;
        for (const v of t.values) {
          const times = seen.get(v) ?? 0;
          if (times > 1) f.duplicated.push(v);
          if (t.outcome === 'committed' && times === 0) f.lostCommitted.push(v);
          if (t.outcome === 'aborted' && times > 0) f.abortedVisible.push(v);
        }
      }
      return f;
    },
  };
}
