/**
 * The produce workload and its ledger: what every producer sent, how many HTTP requests carried
 * each record (its attempts), and what it was told.
 *
 * Every value is `chaos|<producer>|<seq>|<attempt>`. The JSON producer is this suite's own loop, so
 * it retries by hand and each retry is a new value (attempt 1, 2, ...). The client-library
 * producers (src/client, record batches) retry inside the library with the same bytes, so their
 * values say attempt 0 and the attempts are counted at the HTTP layer: a fetch wrapper decodes each
 * produce request's batch and counts the records it carries. Connection-refused requests (a
 * killed server) never reached anyone and are not counted.
 */
import { Kafka, type Producer } from '../../src/client/index.js';
import { decodeTopicData } from '../../src/wire/produce-request.js';
import { decodeRecordBatches } from '../../src/wire/record-batch.js';
import type { Rng } from './rng.js';

export type ProducerKind = 'plain' | 'idempotent' | 'json';

export interface ProducerSpec {
  id: string;
  kind: ProducerKind;
  topic: string;
  partitions: number;
  acks: 1 | 'all';
}

export interface SentRecord {
  producer: string;
  kind: ProducerKind;
  topic: string;
  acks: 1 | 'all';
  partition: number;
  seq: number;
  attempt: number;
  value: string;
  /** HTTP requests that may have delivered this value. */
  requests: number;
  /** Idempotent producers: the `epoch:baseSequence` of each batch that carried it. */
  sentAs?: string[];
  outcome: 'pending' | 'acked' | 'failed';
  offset?: number;
  /** Why it failed, when it did. */
  error?: string;
}

export class Ledger {
  readonly records = new Map<string, SentRecord>();
  add(r: Omit<SentRecord, 'requests' | 'outcome'>): SentRecord {
    const rec: SentRecord = { ...r, requests: 0, outcome: 'pending' };
    this.records.set(r.value, rec);
    return rec;
  }
}

export const chaosValue = (producer: string, seq: number, attempt: number) => `chaos|${producer}|${seq}|${attempt}`;

export function parseValue(v: string): { producer: string; seq: number; attempt: number } | undefined {
  const m = /^chaos\|([^|]+)\|(\d+)\|(\d+)$/.exec(v);
  return m ? { producer: m[1]!, seq: Number(m[2]), attempt: Number(m[3]) } : undefined;
}

/** Picks the next server for each request, round-robin (a load balancer in front of Lambdas). */
export function roundRobin(origins: () => string[]): () => string {
  let i = 0;
  return () => {
    const list = origins();
    return list[i++ % list.length]!;
  };
}

const PRODUCE_PATH = /\/topics\/[^/]+\/partitions\/\d+\/records$/;
/** The multi-partition produce: Kafka's ProduceRequest topic_data, every partition's batches. */
const MULTI_PRODUCE_PATH = /^\/v3\/clusters\/[^/]+\/records$/;

/** The record batches a produce request body carries, by its path. */
function producedBatches(path: string, body: Uint8Array): Uint8Array[] {
  if (PRODUCE_PATH.test(path)) return [body];
  if (MULTI_PRODUCE_PATH.test(path))
    return decodeTopicData(body).flatMap((t) => t.partitions.flatMap((p) => (p.records ? [p.records] : [])));
  return [];
}

/** A fetch that sends each request to the next server and counts the records a produce carries. */
function trackingFetch(next: () => string, ledger: Ledger): typeof globalThis.fetch {
  return async (input, init) => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    const target = new URL(next());
    url.protocol = target.protocol;
    url.host = target.host;
    let carried: SentRecord[] = [];
    const bodies =
      init?.method === 'POST' && init.body instanceof Uint8Array ? producedBatches(url.pathname, init.body) : [];
    if (bodies.length > 0) {
      for (const b of bodies.flatMap((body) => decodeRecordBatches(body))) {
        for (const r of b.records) {
          const rec = r.value && ledger.records.get(Buffer.from(r.value).toString('utf8'));
          if (!rec) continue;
          carried.push(rec);
          if (b.header.producerId >= 0) {
            const as = `${b.header.producerId}/${b.header.producerEpoch}:${b.header.baseSequence}`;
            if (!rec.sentAs?.includes(as)) (rec.sentAs ??= []).push(as);
          }
        }
      }
      for (const r of carried) r.requests++;
    }
    try {
      return await globalThis.fetch(url, init);
    } catch (e) {
      if ((e as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED') for (const r of carried) r.requests--;
      carried = [];
      throw e;
    }
  };
}

export interface Workload {
  stop(): Promise<void>;
}

/** Runs every producer until `stop()`, which waits (bounded) for what is in flight. */
export function startProducers(
  specs: ProducerSpec[],
  servers: () => string[],
  ledger: Ledger,
  rng: Rng,
  clusterId: string,
): Workload {
  let stopping = false;
  const loops = specs.map((spec) =>
    spec.kind === 'json'
      ? jsonProducer(spec, servers, ledger, rng.fork(spec.id), clusterId, () => stopping)
      : clientProducer(spec, servers, ledger, rng.fork(spec.id), clusterId, () => stopping),
  );
  return {
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

async function clientProducer(
  spec: ProducerSpec,
  servers: () => string[],
  ledger: Ledger,
  rng: Rng,
  clusterId: string,
  stopping: () => boolean,
): Promise<void> {
  const kafka = new Kafka({
    url: `http://127.0.0.1:1/v3/clusters/${clusterId}`,
    format: 'record-batch',
    requestTimeoutMs: 10_000,
    fetch: trackingFetch(roundRobin(servers), ledger),
  });
  const producer: Producer = kafka.producer({
    acks: spec.acks,
    enableIdempotence: spec.kind === 'idempotent',
    lingerMs: 2,
    retryBackoffMs: 50,
    retryBackoffMaxMs: 500,
    deliveryTimeoutMs: 20_000,
    metadataMaxAgeMs: 60_000,
  });
  const inFlight = new Set<Promise<void>>();
  let seq = 0;
  while (!stopping()) {
    const partition = rng.int(0, spec.partitions - 1);
    const records = Array.from({ length: rng.int(1, 4) }, () => {
      const s = seq++;
      return ledger.add({
        producer: spec.id,
        kind: spec.kind,
        topic: spec.topic,
        acks: spec.acks,
        partition,
        seq: s,
        attempt: 0,
        value: chaosValue(spec.id, s, 0),
      });
    });
    const p = producer.send({ topic: spec.topic, messages: records.map((r) => ({ partition, value: r.value })) }).then(
      (mds) =>
        mds.forEach((md, i) =>
          Object.assign(records[i]!, { outcome: 'acked', offset: md.offset, partition: md.partition }),
        ),
      (e: Error) => records.forEach((r) => Object.assign(r, { outcome: 'failed', error: e.message.slice(0, 160) })),
    );
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
    if (inFlight.size >= 8) await Promise.race(inFlight);
    await sleep(rng.int(5, 30));
  }
  await Promise.race([Promise.all(inFlight), sleep(25_000)]);
  await producer.close({ timeoutMs: 1000 }).catch(() => {});
}

/** Plain JSON produce (records:batch) with the suite's own retry loop; a retry is a new attempt value. */
async function jsonProducer(
  spec: ProducerSpec,
  servers: () => string[],
  ledger: Ledger,
  rng: Rng,
  clusterId: string,
  stopping: () => boolean,
): Promise<void> {
  const next = roundRobin(servers);
  let seq = 0;
  while (!stopping()) {
    const partition = rng.int(0, spec.partitions - 1);
    let pending = Array.from({ length: rng.int(1, 4) }, () => seq++);
    for (let attempt = 1; pending.length > 0 && attempt <= 6; attempt++) {
      const recs = pending.map((s) =>
        ledger.add({
          producer: spec.id,
          kind: 'json',
          topic: spec.topic,
          acks: spec.acks,
          partition,
          seq: s,
          attempt,
          value: chaosValue(spec.id, s, attempt),
        }),
      );
      recs.forEach((r) => r.requests++);
      const entries = recs.map((r) => ({
        id: r.value,
        partition_id: partition,
        value: { type: 'STRING', data: r.value },
      }));
      let retry: number[] = [];
      try {
        const res = await fetch(
          `${next()}/v3/clusters/${clusterId}/topics/${spec.topic}/records:batch?acks=${spec.acks === 'all' ? 'all' : '1'}`,
          {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ entries }),
            signal: AbortSignal.timeout(10_000),
          },
        );
        const body = (await res.json().catch(() => undefined)) as
          | { successes?: { id: string; offset: number }[]; failures?: { id: string }[] }
          | undefined;
        if (res.status !== 207 || !body?.successes) {
          recs.forEach((r) =>
            Object.assign(r, { outcome: 'failed', error: `HTTP ${res.status} ${JSON.stringify(body).slice(0, 120)}` }),
          );
          retry = pending;
        } else {
          for (const s of body.successes)
            Object.assign(ledger.records.get(s.id)!, { outcome: 'acked', offset: s.offset });
          for (const f of body.failures ?? []) {
            const r = ledger.records.get(f.id)!;
            Object.assign(r, { outcome: 'failed', error: JSON.stringify(f).slice(0, 160) });
            retry.push(r.seq);
          }
        }
      } catch (e) {
        recs.forEach((r) =>
          Object.assign(r, {
            outcome: 'failed',
            error: String((e as { cause?: { code?: string } }).cause?.code ?? (e as Error).name),
          }),
        );
        if ((e as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED') recs.forEach((r) => r.requests--);
        retry = pending;
      }
      pending = retry;
      if (pending.length > 0) await sleep(50 * attempt);
    }
    await sleep(rng.int(5, 30));
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
