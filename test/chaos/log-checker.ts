/**
 * Reads every partition back through a server (after the faults stopped) and compares it with the
 * ledger of what the producers sent and were told.
 */
import { parseValue, type Ledger, type SentRecord } from './producers.js';

export interface PartitionRead {
  topic: string;
  partition: number;
  highWatermark: number;
  logStartOffset: number;
  /** offset -> value */
  records: Map<number, string>;
  /** Offsets below the HW at which a fetch returned nothing and did not move on. */
  unreachable: number[];
}

export interface LogFindings {
  sent: number;
  acked: number;
  failed: number;
  /** Acked below the final HW, absent from the log. */
  lost: string[];
  /**
   * Acked at an offset the final HW has not reached, so no consumer can read it. With acks=all
   * that breaks the promise of the ack (every in-sync replica has it, so the HW covers it); with
   * acks=1 it means the followers had not caught up when the run read the log.
   */
  ackedAboveHwAll: string[];
  ackedAboveHwOne: number;
  /** Extra copies the server made of one request's records (more copies than requests that carried them). */
  serverDuplicates: string[];
  /** Extra copies of a plain producer's records explained by its retries (Kafka allows them). */
  clientRetryDuplicates: number;
  /** A few of them, to read. */
  clientRetryExamples: string[];
  /** An extra copy of an idempotent producer's record, sent under one producer epoch. */
  idempotentDuplicates: string[];
  /** An extra copy of an idempotent producer's record that the client resent under a new epoch (KIP-360 bump). */
  idempotentBumpDuplicates: string[];
  /** Offsets in [log start, HW) no fetch returned and that a fetch skipped over. */
  gaps: string[];
  unreachableBelowHw: string[];
  /** Acked at one offset, found at another (and not at the acked one). */
  moved: string[];
  /** Out of send order within (producer, partition): a violation for idempotent producers only. */
  reorderedIdempotent: string[];
  reorderedPlain: number;
  /** Told failed (or never told), found in the log: allowed, reported. */
  failedButPresent: number;
  /** HW summed over partitions, and the records read below it. */
  highWatermarks: number;
  recordsRead: number;
  /** Per partition: log start, HW, records read, highest acked offset. */
  partitions: string[];
}

export async function readPartition(
  origin: string,
  clusterId: string,
  topic: string,
  partition: number,
): Promise<PartitionRead> {
  const base = `${origin}/v3/clusters/${clusterId}/topics/${topic}/partitions/${partition}/records`;
  const out: PartitionRead = {
    topic,
    partition,
    highWatermark: 0,
    logStartOffset: 0,
    records: new Map(),
    unreachable: [],
  };
  let offset = 0;
  for (let guard = 0; guard < 100_000; guard++) {
    const res = await fetch(`${base}?offset=${offset}&format=string&max_bytes=1048576`, {
      signal: AbortSignal.timeout(15_000),
    });
    if (res.status === 416 && offset === 0) {
      // Below the log start: start there.
      const body = (await res.json()) as { log_start_offset?: number };
      offset = body.log_start_offset ?? 0;
      continue;
    }
    if (res.status !== 200)
      throw new Error(`fetch ${topic}-${partition} at ${offset}: ${res.status} ${await res.text()}`);
    const body = (await res.json()) as {
      records: { offset: number; value: { data: string } | null }[];
      next_offset: number;
      high_watermark: number;
      log_start_offset: number;
    };
    out.highWatermark = body.high_watermark;
    out.logStartOffset = body.log_start_offset;
    if (offset === 0 && body.log_start_offset > 0) offset = body.log_start_offset;
    for (const r of body.records) if (r.offset >= offset) out.records.set(r.offset, r.value?.data ?? '');
    if (offset >= body.high_watermark) break;
    if (body.records.length === 0 && body.next_offset <= offset) {
      // Stuck below the HW: a consumer would stay here for ever. Note it and probe the next offset.
      out.unreachable.push(offset);
      offset++;
      continue;
    }
    offset = Math.max(body.next_offset, offset + (body.records.length === 0 ? 0 : 1));
  }
  return out;
}

export function checkLog(ledger: Ledger, reads: PartitionRead[]): LogFindings {
  const f: LogFindings = {
    sent: 0,
    acked: 0,
    failed: 0,
    lost: [],
    ackedAboveHwAll: [],
    ackedAboveHwOne: 0,
    serverDuplicates: [],
    clientRetryDuplicates: 0,
    clientRetryExamples: [],
    idempotentDuplicates: [],
    idempotentBumpDuplicates: [],
    gaps: [],
    unreachableBelowHw: [],
    moved: [],
    reorderedIdempotent: [],
    reorderedPlain: 0,
    failedButPresent: 0,
    highWatermarks: 0,
    recordsRead: 0,
    partitions: [],
  };
  /** value -> where it was found */
  const hwOf = new Map(reads.map((r) => [`${r.topic}-${r.partition}`, r.highWatermark]));
  const found = new Map<string, { topic: string; partition: number; offset: number }[]>();
  for (const read of reads) {
    const tp = `${read.topic}-${read.partition}`;
    f.highWatermarks += read.highWatermark - read.logStartOffset;
    f.recordsRead += read.records.size;
    for (const o of read.unreachable) f.unreachableBelowHw.push(`${tp}@${o}`);
    const unreachable = new Set(read.unreachable);
    for (let o = read.logStartOffset; o < read.highWatermark; o++)
      if (!read.records.has(o) && !unreachable.has(o)) f.gaps.push(`${tp}@${o}`);
    for (const [offset, value] of read.records) {
      const list = found.get(value) ?? [];
      list.push({ topic: read.topic, partition: read.partition, offset });
      found.set(value, list);
    }
  }

  // One logical send (producer, seq) may have several values (the JSON producer's attempts).
  const copiesBySend = new Map<string, { records: SentRecord[]; copies: number }>();
  for (const r of ledger.records.values()) {
    f.sent += r.attempt <= 1 ? 1 : 0;
    const where = found.get(r.value) ?? [];
    if (r.outcome === 'acked') {
      f.acked++;
      const hw = hwOf.get(`${r.topic}-${r.partition}`) ?? 0;
      if (where.length === 0 && (r.offset ?? 0) >= hw) {
        if (r.acks === 'all')
          f.ackedAboveHwAll.push(`${r.value} (acked ${r.topic}-${r.partition}@${r.offset}, HW ${hw})`);
        else f.ackedAboveHwOne++;
      } else if (where.length === 0) f.lost.push(`${r.value} (acked ${r.topic}-${r.partition}@${r.offset})`);
      else if (
        r.offset !== undefined &&
        r.offset >= 0 &&
        !where.some((w) => w.partition === r.partition && w.offset === r.offset)
      ) {
        f.moved.push(`${r.value} acked @${r.offset}, found @${where.map((w) => w.offset).join(',')}`);
      }
    } else {
      f.failed++;
      if (where.length > 0) f.failedButPresent++;
    }
    // A request appends its records at most once: more copies than requests is the server's doing.
    if (where.length > Math.max(1, r.requests))
      f.serverDuplicates.push(`${r.value} x${where.length} from ${r.requests} request(s)`);
    const key = `${r.producer}|${r.seq}`;
    const entry = copiesBySend.get(key) ?? { records: [], copies: 0 };
    entry.records.push(r);
    entry.copies += where.length;
    copiesBySend.set(key, entry);
  }
  for (const read of reads) {
    let maxAcked = -1;
    for (const r of ledger.records.values())
      if (r.outcome === 'acked' && r.topic === read.topic && r.partition === read.partition)
        maxAcked = Math.max(maxAcked, r.offset ?? -1);
    f.partitions.push(
      `${read.topic}-${read.partition}: start ${read.logStartOffset} hw ${read.highWatermark} read ${read.records.size} max acked ${maxAcked}`,
    );
  }
  for (const [key, { records, copies }] of copiesBySend) {
    if (copies <= 1) continue;
    if (records[0]!.kind === 'idempotent') {
      const r = records[0]!;
      const at = (found.get(r.value) ?? []).map((w) => w.offset).join(',');
      const epochs = new Set((r.sentAs ?? []).map((a) => a.split(':')[0]));
      // docs/client.md: a record in doubt when the producer bumps its epoch (KIP-360) is resent under the new epoch.
      const detail = `${key} x${copies} at ${r.topic}-${r.partition}@${at}, sent as ${(r.sentAs ?? []).join(' ')}`;
      (epochs.size > 1 ? f.idempotentBumpDuplicates : f.idempotentDuplicates).push(detail);
    } else {
      // What the server alone added is counted above; the rest is the client's retries.
      const serverExtra = records.reduce(
        (n, r) => n + Math.max(0, (found.get(r.value)?.length ?? 0) - Math.max(1, r.requests)),
        0,
      );
      f.clientRetryDuplicates += copies - 1 - serverExtra;
      if (copies - 1 - serverExtra > 0 && f.clientRetryExamples.length < 5) {
        f.clientRetryExamples.push(
          `${key} x${copies}: ${records.map((r) => `attempt ${r.attempt} ${r.outcome}${r.error ? ` (${r.error})` : ''} in ${r.requests} request(s)`).join(', ')}`,
        );
      }
    }
  }

  // Order per (producer, partition): first copies, by offset, must be in send order.
  for (const read of reads) {
    const lastSeq = new Map<string, number>();
    const seen = new Set<string>();
    for (const offset of [...read.records.keys()].sort((a, b) => a - b)) {
      const v = parseValue(read.records.get(offset)!);
      if (!v || seen.has(`${v.producer}|${v.seq}`)) continue;
      seen.add(`${v.producer}|${v.seq}`);
      const prev = lastSeq.get(v.producer);
      if (prev !== undefined && v.seq < prev) {
        const kind = ledger.records.get(read.records.get(offset)!)?.kind;
        if (kind === 'idempotent')
          f.reorderedIdempotent.push(
            `${read.topic}-${read.partition}@${offset} ${v.producer} seq ${v.seq} after ${prev}`,
          );
        else f.reorderedPlain++;
      }
      lastSeq.set(v.producer, Math.max(prev ?? -1, v.seq));
    }
  }
  return f;
}
