/**
 * The produce routes over HTTP (records, records:batch, a partition's record batches), DeleteRecords
 * and the replica catch-up. Reading a partition's records is record-fetch-routes.ts.
 */
import { Hono } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import { parseAcks } from './acks.js';
import { admitProduce, appendProduced, type ProducedAppends } from '../transactions/produce-admission.js';
import { validateProducedBatches } from '../log/produced-batches.js';
import type { AppendOutcome } from '../log/partition-log.js';
import type { LogRecord } from '../wire/record-batch.js';
import { requirePartition, type Topic } from '../topics/topics.js';
import type { AppEnv } from './app-env.js';
import type { AppServices } from '../services.js';
import { toErrorResponse } from './error-mapping.js';
import { entryRecord, produceRecordSchema, type ProduceRecordBody, type ReadRecord } from './record-encoding.js';
import { isoTimestamps, type DataType } from './record-text.js';
import { requireRecordBatchBody, requireTransactionalBatches } from './record-batch-body.js';
import { readBatchBody } from './batch-body.js';
import { JsonBytes } from './json-bytes.js';
import { parseJsonBytes, partitionParam, readBody, readJson, readJsonBytes, readJsonValues } from './request.js';
import { authorize } from './security.js';
import type { produceResultSchema } from './record-answers.js';

export const deleteRecordsSchema = z.object({ before_offset: z.number().int().min(-1) });

export const batchSchema = z.object({
  entries: z.array(produceRecordSchema.extend({ id: z.union([z.string(), z.number()]).transform(String) })).min(1),
  // Extension: an idempotent producer's id, epoch and one base sequence per partition.
  producer_id: z.number().int().nonnegative().optional(),
  producer_epoch: z.number().int().nonnegative().optional(),
  sequences: z
    .array(z.object({ partition_id: z.number().int().nonnegative(), base_sequence: z.number().int().nonnegative() }))
    .optional(),
  // Extension: a transactional producer's id (with producer_id, producer_epoch and sequences).
  transactional_id: z.string().min(1).optional(),
});

/** The batch's fields besides its entries (batch-body.ts reads the entries). */
const batchFieldsSchema = batchSchema.omit({ entries: true });

/** An idempotent producer's id, epoch and base sequences, when the batch names one. */
function producerOf(
  body: Omit<z.infer<typeof batchSchema>, 'entries'> & { entries: readonly { partition_id?: number | null }[] },
): Pick<ProducedAppends, 'producer'> & {
  baseSequences?: Map<number, number>;
} {
  const { producer_id: producerId, producer_epoch: producerEpoch, sequences } = body;
  if (producerId === undefined && producerEpoch === undefined && sequences === undefined) return {};
  if (producerId === undefined || producerEpoch === undefined || sequences === undefined) {
    throw new KafkaError(
      'INVALID_REQUEST',
      'An idempotent batch needs producer_id, producer_epoch and sequences together',
    );
  }
  if (body.entries.some((e) => e.partition_id === undefined || e.partition_id === null)) {
    throw new KafkaError(
      'INVALID_REQUEST',
      'Every entry of an idempotent batch needs an explicit partition_id (sequences are per partition)',
    );
  }
  return {
    producer: { producerId, producerEpoch },
    baseSequences: new Map(sequences.map((s) => [s.partition_id, s.base_sequence])),
  };
}

type Success = {
  ok: true;
  partition: number;
  offset: number;
  timestamp: number;
  keyType: DataType;
  valueType: DataType;
  keySize: number | null;
  valueSize: number | null;
  duplicate?: boolean;
};
type Failure = { ok: false; status: number; body: ReturnType<typeof toErrorResponse>['body'] };
type EntryResult = Success | Failure;

/** One partition's entries of a request: their records in entry order, and the append's outcome. */
interface PartitionGroup {
  partition: number;
  records: LogRecord[];
  entries: number[];
  outcome?: AppendOutcome;
  /** The outcome's failure as each of its entries answers it, once. */
  failure?: Failure;
}

/**
 * A request's results, entry by entry, read from its partitions' outcomes rather than kept as an
 * object per entry (a batch holds thousands, and each object lives until the answer is written).
 */
class ProduceResults {
  constructor(
    readonly length: number,
    /** Entries refused before the append (a bad record, partition, or idempotent batch). */
    private readonly refused: Map<number, Failure>,
    /** Each entry's group in `groups` and its place among the group's records. */
    private readonly groupOf: Int32Array,
    private readonly placeOf: Int32Array,
    private readonly groups: PartitionGroup[],
    private readonly keyTypes: DataType[],
    private readonly valueTypes: DataType[],
  ) {}

  /** The entry's failure, or undefined when it was appended. */
  failure(i: number): Failure | undefined {
    const refused = this.refused.get(i);
    if (refused) return refused;
    const group = this.groups[this.groupOf[i]!]!;
    const outcome = group.outcome!;
    if (outcome.ok) return undefined;
    if (!group.failure) {
      const { status, body } = toErrorResponse(outcome.error);
      group.failure = { ok: false, status, body };
    }
    return group.failure;
  }

  /** The delivery report of an entry {@link failure} says was appended, into `into` (reused by the caller). */
  success(i: number, into: Success): Success {
    const group = this.groups[this.groupOf[i]!]!;
    const k = this.placeOf[i]!;
    const { info } = group.outcome as Extract<AppendOutcome, { ok: true }>;
    const record = group.records[k]!;
    into.partition = group.partition;
    into.offset = info.baseOffset < 0 ? -1 : info.baseOffset + k; // acks=0: not known
    into.timestamp = info.logAppendTime >= 0 ? info.logAppendTime : record.timestamp;
    into.keyType = this.keyTypes[i]!;
    into.valueType = this.valueTypes[i]!;
    into.keySize = record.key?.byteLength ?? null;
    into.valueSize = record.value?.byteLength ?? null;
    into.duplicate = info.duplicate === true;
    return into;
  }

  at(i: number): EntryResult {
    return this.failure(i) ?? this.success(i, emptySuccess());
  }
}

const emptySuccess = (): Success => ({
  ok: true,
  partition: 0,
  offset: 0,
  timestamp: 0,
  keyType: 'BINARY',
  valueType: 'BINARY',
  keySize: null,
  valueSize: null,
  duplicate: false,
});

function copySuccess(to: Success, from: Success): Success {
  to.partition = from.partition;
  to.offset = from.offset;
  to.timestamp = from.timestamp;
  to.keyType = from.keyType;
  to.valueType = from.valueType;
  to.keySize = from.keySize;
  to.valueSize = from.valueSize;
  to.duplicate = from.duplicate;
  return to;
}

/**
 * Produces a request's records: every record is encoded and placed on its partition, then all
 * partitions are appended as one request (one object). Results are read in entry order; a
 * transactional producer the coordinator refuses fails the request.
 */
async function produce(
  services: AppServices,
  topic: Topic,
  bodies: (ProduceRecordBody | ReadRecord)[],
  options: Omit<ProducedAppends, 'topics'> & { baseSequences?: Map<number, number>; spare?: Uint8Array },
): Promise<ProduceResults> {
  const now = services.clock.now();
  const choose = services.partitioner.forRequest(topic.name, topic.partitionCount);
  const n = bodies.length;
  const refused = new Map<number, Failure>();
  const groupOf = new Int32Array(n).fill(-1);
  const placeOf = new Int32Array(n);
  const groups: PartitionGroup[] = [];
  const byPartition = new Map<number, PartitionGroup>();
  // Each entry's types; its sizes and timestamp are its record's.
  const keyTypes: DataType[] = new Array(n);
  const valueTypes: DataType[] = new Array(n);
  const compact = topic.config.cleanupPolicy.compact;
  let last: PartitionGroup | undefined; // the sticky partitioner's: mostly one partition a request
  for (let i = 0; i < n; i++) {
    const body = bodies[i]!;
    try {
      const { record, keyType, valueType } = entryRecord(body, now);
      if (body.partition_id !== undefined && body.partition_id !== null) requirePartition(topic, body.partition_id);
      if (compact && record.key === null) {
        throw new KafkaError('INVALID_RECORD', `Compacted topic ${topic.name} cannot accept a record without a key`);
      }
      const partition = choose(record.key, body.partition_id ?? undefined);
      keyTypes[i] = keyType;
      valueTypes[i] = valueType;
      let group = last?.partition === partition ? last : byPartition.get(partition);
      if (!group) {
        group = { partition, records: [], entries: [] };
        byPartition.set(partition, group);
      }
      last = group;
      group.records.push(record);
      group.entries.push(i);
    } catch (e) {
      const { status, body: err } = toErrorResponse(e);
      refused.set(i, { ok: false, status, body: err });
    }
  }

  if (options.producer) {
    // Sequences count a partition's records: an idempotent partition batch is all or nothing.
    for (const [partition, group] of [...byPartition]) {
      const failed = bodies.findIndex((b, i) => b.partition_id === partition && refused.has(i));
      if (failed < 0) continue;
      const body = { ...refused.get(failed)!.body };
      for (const i of group.entries)
        refused.set(i, {
          ok: false,
          status: 400,
          body: {
            ...body,
            message: `Another record of this partition's idempotent batch was rejected: ${body.message}`,
          },
        });
      byPartition.delete(partition);
    }
  }
  const { baseSequences, spare, ...produced } = options;
  for (const group of byPartition.values()) {
    group.entries.forEach((i, k) => {
      groupOf[i] = groups.length;
      placeOf[i] = k;
    });
    groups.push(group);
  }
  const appends = groups.map((g) => ({ partition: g.partition, records: g.records }));
  const { outcomes: perTopic, refused: refusedRequest } = await appendProduced(services, {
    ...produced,
    topics: [{ topic, appends, ...(baseSequences ? { baseSequences } : {}), ...(spare ? { spare } : {}) }],
  });
  if (refusedRequest) throw refusedRequest;
  const outcomes = perTopic[0]!;
  for (const group of groups) group.outcome = outcomes.get(group.partition)!;
  return new ProduceResults(n, refused, groupOf, placeOf, groups, keyTypes, valueTypes);
}

/** A delivery report, as the document's schema says (record-answers.ts; a type only, not in the bundle). */
function success(
  clusterId: string,
  topic: string,
  r: Success,
  iso = isoTimestamps(),
): z.input<typeof produceResultSchema> {
  return {
    cluster_id: clusterId,
    topic_name: topic,
    partition_id: r.partition,
    offset: r.offset,
    timestamp: iso(r.timestamp),
    key: r.keySize === null ? null : { type: r.keyType, size: r.keySize },
    value: r.valueSize === null ? null : { type: r.valueType, size: r.valueSize },
    ...(r.duplicate ? { duplicate: true } : {}),
  };
}

/**
 * Writes `JSON.stringify({ id, ...success(...) })` of each report into `out`, without the objects:
 * all that follows the id (names, partition, offset, timestamp, key and value) is kept as bytes
 * from report to report while only the offset changes, and an offset one past the last is
 * written by counting up its digits in those bytes.
 */
function successWriter(out: JsonBytes, clusterId: string, topic: string): (id: string, r: Success) => void {
  const iso = isoTimestamps();
  const names = `,"cluster_id":${JSON.stringify(clusterId)},"topic_name":${JSON.stringify(topic)},"partition_id":`;
  // The last report written, copied: the caller may hand the same object, refilled, every time.
  let last: Success | undefined;
  let rest = Buffer.alloc(0);
  let digitsStart = 0;
  let digitsEnd = 0;
  /** Two reports whose bytes after the id differ at most in the offset. */
  const sameBut = (a: Success, b: Success) =>
    a.partition === b.partition &&
    a.timestamp === b.timestamp &&
    a.keySize === b.keySize &&
    a.valueSize === b.valueSize &&
    a.keyType === b.keyType &&
    a.valueType === b.valueType &&
    a.duplicate === b.duplicate;
  /** The next offset's digits in `rest`, in place: false when it has more digits (or is not one past). */
  const countUp = (offset: number, previous: number): boolean => {
    if (offset !== previous + 1 || previous < 0) return false;
    for (let i = digitsEnd - 1; i >= digitsStart; i--) {
      if (rest[i] !== 0x39) {
        rest[i]!++;
        return true;
      }
      rest[i] = 0x30;
    }
    return false; // 99 -> 100: written afresh
  };
  return (id, r) => {
    out.ascii('{"id":"');
    if (out.plainAscii(id)) out.ascii('"');
    else {
      out.truncate(out.length - 1); // the opening quote: JSON.stringify writes its own
      out.utf8(JSON.stringify(id));
    }
    if (last === undefined || !sameBut(last, r) || (r.offset !== last.offset && !countUp(r.offset, last.offset))) {
      const key = r.keySize === null ? 'null' : `{"type":"${r.keyType}","size":${r.keySize}}`;
      const value = r.valueSize === null ? 'null' : `{"type":"${r.valueType}","size":${r.valueSize}}`;
      const head = `${names}${r.partition},"offset":`;
      digitsStart = Buffer.byteLength(head, 'utf8');
      digitsEnd = digitsStart + String(r.offset).length;
      rest = Buffer.from(
        `${head}${r.offset},"timestamp":"${iso(r.timestamp)}","key":${key},"value":${value}${r.duplicate ? ',"duplicate":true}' : '}'}`,
        'utf8',
      );
    }
    last = copySuccess(last ?? emptySuccess(), r);
    out.raw(rest);
  };
}

export function recordRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // One record, or (Confluent's streaming mode) several records back to back in one body, answered
  // with one delivery report each, in order. The records of one body are appended together.
  app.post('/topics/:topic/records', async (c) => {
    await authorize(c, 'WRITE', 'TOPIC', c.req.param('topic'));
    const services = c.get('services');
    const bodies = (await readJsonValues(c)).map((v) => produceRecordSchema.parse(v));
    const topic = await services.topics.get(c.req.param('topic'));
    const results = await produce(services, topic, bodies, { acks: parseAcks(c) });
    if (results.length === 1) {
      const r = results.at(0);
      if (!r.ok) return c.json(r.body, r.status as 400);
      return c.json({ error_code: 200, ...success(services.clusterId, topic.name, r) });
    }
    const iso = isoTimestamps();
    const reports = bodies.map((_, i) => {
      const r = results.at(i);
      return JSON.stringify(r.ok ? { error_code: 200, ...success(services.clusterId, topic.name, r, iso) } : r.body);
    });
    return c.body(`${reports.join('\n')}\n`, 200, { 'Content-Type': 'application/json' });
  });

  // Confluent's batch produce, without its limit of 10 entries: the body size is the bound.
  app.post('/topics/:topic/records:batch', async (c) => {
    await authorize(c, 'WRITE', 'TOPIC', c.req.param('topic'));
    const services = c.get('services');
    const bytes = await readJsonBytes(c);
    const fast = readBatchBody(bytes);
    const rest = fast && batchFieldsSchema.safeParse(fast.rest);
    const body =
      fast && rest?.success ? { ...rest.data, entries: fast.entries } : batchSchema.parse(parseJsonBytes(bytes));
    const ids = new Set(body.entries.map((e) => e.id));
    if (ids.size !== body.entries.length)
      throw new KafkaError('BAD_REQUEST', 'Entry ids must be unique within a batch');
    const acks = parseAcks(c);
    const producer = producerOf(body);
    const topic = await services.topics.get(c.req.param('topic'));
    const transactionalId = body.transactional_id;
    if (transactionalId !== undefined && !producer.producer)
      throw new KafkaError('INVALID_REQUEST', 'A transactional batch needs producer_id, producer_epoch and sequences');
    await admitProduce({ acks, transactionalId }, (id) => authorize(c, 'WRITE', 'TRANSACTIONAL_ID', id));
    // The body is not read after its records are encoded: the request object is laid out in it.
    const results = await produce(services, topic, body.entries, {
      acks,
      spare: bytes,
      ...producer,
      ...(transactionalId !== undefined ? { transactionalId } : {}),
    });
    // Written into bytes, once: a batch of a thousand records answers a thousand reports.
    const out = new JsonBytes(results.length * 200 + 64);
    const writeSuccess = successWriter(out, services.clusterId, topic.name);
    out.ascii('{"successes":[');
    let first = true;
    const report = emptySuccess();
    for (let i = 0; i < results.length; i++) {
      if (results.failure(i)) continue;
      if (!first) out.ascii(',');
      first = false;
      writeSuccess(body.entries[i]!.id, results.success(i, report));
    }
    out.ascii('],"failures":[');
    first = true;
    for (let i = 0; i < results.length; i++) {
      const r = results.failure(i);
      if (!r) continue;
      if (!first) out.ascii(',');
      first = false;
      out.utf8(JSON.stringify({ id: body.entries[i]!.id, ...r.body }));
    }
    out.ascii(']}');
    return c.body(out.done(), 207, { 'Content-Type': 'application/json' });
  });

  // Extension: Kafka's produce for one partition with a body of record batches (record-batch-body.ts).
  // The answer is Kafka's per-partition produce response.
  app.post('/topics/:topic/partitions/:partition/records', async (c) => {
    await authorize(c, 'WRITE', 'TOPIC', c.req.param('topic'));
    const services = c.get('services');
    requireRecordBatchBody(c);
    const acks = parseAcks(c);
    const topic = await services.topics.get(c.req.param('topic'));
    const partition = partitionParam(c.req.param('partition'));
    requirePartition(topic, partition);
    const { config } = topic;
    const batches = validateProducedBatches(await readBody(c), {
      maxMessageBytes: config.maxMessageBytes,
      requireKeys: config.cleanupPolicy.compact,
    });
    const transactionalId = c.req.query('transactional_id');
    requireTransactionalBatches(transactionalId, batches);
    await admitProduce({ acks, transactionalId }, (id) => authorize(c, 'WRITE', 'TRANSACTIONAL_ID', id));
    const { producer } = batches;
    const { outcomes } = await appendProduced(services, {
      acks,
      ...(transactionalId !== undefined ? { transactionalId } : {}),
      ...(producer ? { producer } : {}),
      topics: [
        {
          topic,
          appends: [{ partition, batches }],
          ...(producer ? { baseSequences: new Map([[partition, producer.baseSequence]]) } : {}),
        },
      ],
    });
    const outcome = outcomes[0]!.get(partition)!;
    if (!outcome.ok) throw outcome.error;
    const { info } = outcome;
    return c.json({
      kind: 'KafkaProduceResult',
      cluster_id: services.clusterId,
      topic_name: topic.name,
      partition_id: partition,
      base_offset: info.baseOffset,
      last_offset: info.lastOffset,
      record_count: batches.recordCount,
      log_append_time: info.logAppendTime,
      log_start_offset: info.logStartOffset,
      ...(info.duplicate ? { duplicate: true } : {}),
    });
  });

  // Kafka's DeleteRecords (extension: v3 has none): moves the log start offset to before_offset
  // (-1: the high watermark). Records below it are gone for readers at once; their objects are
  // deleted by the scheduler after file.delete.delay.ms.
  app.post('/topics/:topic/partitions/:partition/records:delete', async (c) => {
    await authorize(c, 'DELETE', 'TOPIC', c.req.param('topic')); // DeleteRecords
    const services = c.get('services');
    const body = deleteRecordsSchema.parse(await readJson(c));
    const topic = await services.topics.get(c.req.param('topic'));
    const partition = partitionParam(c.req.param('partition'));
    const target =
      body.before_offset === -1 ? (await services.log.state(topic, partition)).highWatermark : body.before_offset;
    const r = await services.log.advanceLogStartOffset(topic, partition, target);
    return c.json({
      kind: 'KafkaDeleteRecordsResult',
      cluster_id: services.clusterId,
      topic_name: topic.name,
      partition_id: partition,
      low_watermark: r.logStartOffset,
    });
  });

  // Extension: the replica catch-up step on demand (the scheduler runs it on every tick).
  app.post('/topics/:topic/replicas:sync', async (c) => {
    await authorize(c, 'CLUSTER_ACTION', 'CLUSTER'); // replication is the brokers' own (inter-broker) work in Kafka
    const services = c.get('services');
    const topic = await services.topics.get(c.req.param('topic'));
    const reports = await services.log.syncReplicas(topic);
    return c.json({
      kind: 'KafkaReplicaSyncReport',
      topic_name: topic.name,
      partitions: reports.map((r) => ({
        partition_id: r.partition,
        copied_objects: r.copiedObjects,
        caught_up: r.caughtUp,
        removed_from_isr: r.removedFromIsr,
        added_to_isr: r.addedToIsr,
        ...(r.elected !== undefined ? { elected_leader: r.elected } : {}),
      })),
    });
  });

  return app;
}
