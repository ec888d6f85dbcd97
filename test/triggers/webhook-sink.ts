/**
 * A webhook target for trigger tests: an HTTP server on port 0 that records every event it is
 * POSTed and answers what the test says (200 by default; a status, a delay, or a body per call).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KafkaEvent, KafkaEventRecord } from '../../src/triggers/kafka-event.js';

export interface Sink {
  url: string;
  events: KafkaEvent[];
  /** Each event's body size in bytes, as `events`. */
  sizes: number[];
  /** Every record of every successful event, in arrival order. */
  delivered: KafkaEventRecord[];
  /** Decides the answer to each call: a status, an optional JSON body, an optional delay. */
  answer: (event: KafkaEvent, call: number) => { status?: number; body?: unknown; delayMs?: number };
  /** Told of each event once its answer is sent, with the status. */
  answered?: (event: KafkaEvent, status: number) => void;
  close(): Promise<void>;
}

export async function startSink(): Promise<Sink> {
  const sink: Omit<Sink, 'url' | 'close'> = { events: [], sizes: [], delivered: [], answer: () => ({}) };
  let calls = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      const event = JSON.parse(body.toString('utf8')) as KafkaEvent;
      const a = sink.answer(event, calls++);
      if (a.delayMs) await new Promise((r) => setTimeout(r, a.delayMs));
      const status = a.status ?? 200;
      sink.events.push(event);
      sink.sizes.push(body.byteLength);
      if (status >= 200 && status < 300) for (const rs of Object.values(event.records)) sink.delivered.push(...rs);
      res
        .writeHead(status, { 'content-type': 'application/json' })
        .end(a.body === undefined ? '' : JSON.stringify(a.body));
      sink.answered?.(event, status);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(sink, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
}

export const recordValue = (r: KafkaEventRecord) =>
  r.value === undefined ? null : Buffer.from(r.value, 'base64').toString();

/** Polls until `check` holds (or fails the test after `ms`). */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * What at-least-once in order per partition means for what a sink received: each event holds one
 * partition's records in ascending contiguous offsets, and no event starts past the next offset not
 * yet delivered (a redelivery may go back, never skip). Answers the problems found.
 */
export function orderProblems(events: KafkaEvent[]): string[] {
  const problems: string[] = [];
  const next = new Map<string, number>();
  for (const e of events) {
    for (const [key, records] of Object.entries(e.records)) {
      const offsets = records.map((r) => r.offset);
      for (let i = 1; i < offsets.length; i++)
        if (offsets[i] !== offsets[i - 1]! + 1) problems.push(`${key}: not contiguous ${offsets.join(',')}`);
      const expected = next.get(key) ?? offsets[0]!;
      if (offsets[0]! > expected) problems.push(`${key}: skipped from ${expected} to ${offsets[0]}`);
      next.set(key, Math.max(expected, offsets[offsets.length - 1]! + 1));
    }
  }
  return problems;
}

/** The next offset after the highest one the sink acknowledged, per partition. */
export function ackedUpTo(sink: Sink, partitions: number): number[] {
  return Array.from({ length: partitions }, (_, p) =>
    sink.delivered.filter((r) => r.partition === p).reduce((n, r) => Math.max(n, r.offset + 1), 0),
  );
}
