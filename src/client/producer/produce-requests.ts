/**
 * The producer's wire formats (the strategies the sender sends a request's batches with): Kafka's
 * multi-partition ProduceRequest (`POST .../records`, `topic_data`: every partition and topic of
 * a request in one body), one partition's RecordBatch (`POST .../partitions/{p}/records`, for a
 * server without the former), or JSON `records:batch` (one topic per request). Each turns its
 * answer into one result per batch; the sender handles them alike. What the server was found to
 * have is remembered here (src/client/wire-formats.ts), and a refused request is sent the older
 * way at once: nothing was written.
 */
import { encodeTopicDataParts, PRODUCE_REQUEST_MEDIA_TYPE } from '../../wire/produce-request.js';
import type { CompressionType } from '../../wire/compression/index.js';
import type { Acks } from '../../wire/protocol.js';
import { wireEntry, type WireEntry } from '../codec.js';
import { asClientError, KafkaClientError, KafkaProtocolError, errorFromBody } from '../errors.js';
import type { Placement } from '../metadata.js';
import { encodeProducerBatch } from '../record-batches.js';
import { enc, RECORD_BATCH_MEDIA_TYPE, type Transport } from '../transport.js';
import { RouteProbe, type WireFormat } from '../wire-formats.js';
import { BatchBuffers } from './batch-buffers.js';
import type { ProducerBatch } from './record-accumulator.js';
import type { ProducerIdAndEpoch } from './transaction-manager.js';

export interface ProduceRequestsConfig {
  acks: Acks;
  requestTimeoutMs: number;
  /** Compression of record batches (Kafka's compression.type), at the codec's level where it has one. */
  compression: { type: CompressionType; level?: number };
  /** How batches travel (the connection's format when unset). */
  format?: WireFormat;
  /** A transactional producer's id: its requests and batches say so. */
  transactionalId?: string;
}

/** A batch's outcome in a request's answer. */
export interface BatchResult {
  offsets?: (number | undefined)[];
  timestamps?: (number | undefined)[];
  /** Per record, when the server failed some entries. */
  errors?: (KafkaClientError | undefined)[];
  /** The batch's error: the first failed entry's, or the whole request's. */
  error?: KafkaClientError;
  /** The partition's leader, epoch and ISR as of the append, when the answer says them (multi-partition produce). */
  placement?: Placement;
}

/** The record-batch produce answer (`KafkaProduceResult`). */
interface WireProduceResult {
  base_offset: number;
  last_offset: number;
  record_count: number;
  /** ms, or -1 for a CreateTime topic. */
  log_append_time: number;
  log_start_offset: number;
  duplicate?: boolean;
}

/** One partition of the multi-partition produce answer (Kafka's PartitionProduceResponse). */
interface WirePartitionResponse {
  index: number;
  error_code: number;
  error?: string;
  error_message?: string;
  base_offset: number;
  log_append_time_ms: number;
  /** KIP-951's current leader, with the ISR: absent from an older server's answer. */
  leader_id?: number;
  leader_epoch?: number;
  isr?: number[];
}

interface WireProduceResponse {
  responses?: { name: string; partition_responses?: WirePartitionResponse[] }[];
}

interface WireBatchResponse {
  successes?: { id: string; partition_id: number; offset: number; timestamp?: string }[];
  failures?: { id: string; error_code?: number; message?: string; error?: string }[];
}

/** How the sender groups batches into requests, by the format in use. */
export type RequestShape = 'topic-data' | 'partition' | 'json';

export class ProduceRequests {
  /** Whether the server has the multi-partition produce: unknown until the first one tells. */
  private readonly multiPartition = new RouteProbe();
  /** Memory of encoded batches, reused from one request to the next. */
  private readonly buffers: BatchBuffers;

  constructor(
    private readonly transport: Transport,
    private readonly config: ProduceRequestsConfig,
    /** The id and epoch batches are written under; undefined for a producer that is not idempotent. */
    private readonly identity: () => ProducerIdAndEpoch | undefined,
    bufferBytes: number,
  ) {
    this.buffers = new BatchBuffers(bufferBytes);
  }

  /**
   * `topic-data`: one request for the batches of many partitions and topics; `partition`: one
   * request per batch (a server without the former); `json`: one request per topic, at most one
   * batch per partition.
   */
  shape(): RequestShape {
    if (!this.transport.recordBatches.use(this.config.format)) return 'json';
    return this.multiPartition.available ? 'topic-data' : 'partition';
  }

  /** Sends the batches of one request (of one topic unless topic-data); one result per batch. */
  produce(batches: ProducerBatch[]): Promise<BatchResult[]> {
    const topic = batches[0]!.topic;
    const shape = this.shape();
    if (shape === 'json') return this.produceJson(topic, batches);
    if (shape === 'topic-data') return this.produceTopicData(batches);
    return this.produceRecordBatch(topic, batches[0]!);
  }

  /**
   * Many partitions' batches in one request (`POST .../records`, Kafka's ProduceRequest
   * topic_data), answered per partition. A server without that route (404 NOT_FOUND) is
   * remembered, and the batches go one request each at once: nothing was written, so no retry.
   */
  private async produceTopicData(batches: ProducerBatch[]): Promise<BatchResult[]> {
    const topics = new Map<string, { index: number; records: Uint8Array }[]>();
    const held: Uint8Array[] = [];
    for (const b of batches) {
      let list = topics.get(b.topic);
      if (!list) topics.set(b.topic, (list = []));
      list.push({ index: b.partition, records: this.encode(b, held) });
    }
    let res;
    try {
      res = await this.transport.request<WireProduceResponse>('POST', '/records', {
        // A transactional producer's request names its transaction, as Kafka's ProduceRequest does.
        query: this.query(),
        bytes: encodeTopicDataParts([...topics].map(([name, partitions]) => ({ name, partitions }))),
        contentType: PRODUCE_REQUEST_MEDIA_TYPE,
        timeoutMs: this.config.requestTimeoutMs,
      });
    } catch (e) {
      if (this.multiPartition.refused(e))
        return Promise.all(
          batches.map(
            async (b) =>
              (await this.produceRecordBatch(b.topic, b).catch((x: unknown) => [{ error: asClientError(x) }]))[0]!,
          ),
        );
      throw e;
    } finally {
      this.releaseAll(held);
    }
    this.multiPartition.answered();
    this.transport.recordBatches.answered();
    const answers = new Map<string, WirePartitionResponse>();
    for (const t of res.body.responses ?? [])
      for (const p of t.partition_responses ?? []) answers.set(`${t.name}\0${p.index}`, p);
    return batches.map((b): BatchResult => {
      const a = answers.get(`${b.topic}\0${b.partition}`);
      if (!a)
        return {
          error: new KafkaClientError('UNKNOWN_SERVER_ERROR', `The produce answer left out ${b.topic}-${b.partition}`, {
            topic: b.topic,
            partition: b.partition,
            retriable: true,
          }),
        };
      if (a.error_code !== 0) {
        // A partition's error inside a 200 answer: no HTTP status of its own.
        return {
          error: new KafkaProtocolError(a.error ?? 'UNKNOWN_SERVER_ERROR', a.error_message ?? `error ${a.error_code}`, {
            topic: b.topic,
            partition: b.partition,
          }),
        };
      }
      const result = this.resultOf(b, a.base_offset, a.log_append_time_ms);
      if (typeof a.leader_id === 'number' && typeof a.leader_epoch === 'number' && Array.isArray(a.isr))
        result.placement = { leader: a.leader_id, leaderEpoch: a.leader_epoch, isr: a.isr };
      return result;
    });
  }

  /**
   * A batch's RecordBatch v2 bytes, with the producer's id, epoch and the batch's sequence when
   * idempotent, in reused memory that is added to `held`: the caller gives it back after the request.
   */
  private encode(b: ProducerBatch, held: Uint8Array[]): Uint8Array {
    const id = this.identity();
    const producer = id && b.baseSequence !== undefined ? { ...id, baseSequence: b.baseSequence } : undefined;
    return encodeProducerBatch(
      b.records.map((r) => r.rec),
      producer && this.config.transactionalId !== undefined ? { ...producer, transactional: true } : producer,
      { topic: b.topic, partition: b.partition },
      this.config.compression,
      (n) => {
        const memory = this.buffers.take(n);
        held.push(memory);
        return memory;
      },
    );
  }

  /**
   * Once a request has its answer (or failed), its batches' memory goes back. An answer can come
   * before the whole body was written (a server refusing it early): the rest of that body may then
   * go out altered, to a server that has answered and discards it.
   */
  private releaseAll(held: Uint8Array[]): void {
    for (const b of held) this.buffers.release(b);
  }

  /** Offsets (and LogAppendTime timestamps) of a batch appended at `baseOffset` (-1 with acks=0). */
  private resultOf(b: ProducerBatch, baseOffset: number, logAppendTime: number): BatchResult {
    const n = b.records.length;
    const offsets: (number | undefined)[] = new Array(n);
    if (typeof baseOffset === 'number' && baseOffset >= 0) for (let i = 0; i < n; i++) offsets[i] = baseOffset + i;
    const timestamps =
      typeof logAppendTime === 'number' && logAppendTime >= 0 ? new Array<number>(n).fill(logAppendTime) : undefined;
    return { offsets, ...(timestamps ? { timestamps } : {}) };
  }

  /**
   * One partition's batch as RecordBatch v2 bytes (`POST .../partitions/{p}/records`). With format
   * 'auto', a server without that API (NOT_FOUND: no such route) is remembered and the batch goes as
   * JSON at once; nothing was written, so this is no retry.
   */
  private async produceRecordBatch(topic: string, b: ProducerBatch): Promise<BatchResult[]> {
    const held: Uint8Array[] = [];
    const bytes = this.encode(b, held);
    let res;
    try {
      res = await this.transport.request<WireProduceResult>(
        'POST',
        `/topics/${enc(topic)}/partitions/${b.partition}/records`,
        {
          query: this.query(),
          bytes,
          contentType: RECORD_BATCH_MEDIA_TYPE,
          topic,
          partition: b.partition,
          timeoutMs: this.config.requestTimeoutMs,
        },
      );
    } catch (e) {
      if (this.transport.recordBatches.refused(this.config.format, e)) return this.produceJson(topic, [b]);
      throw e;
    } finally {
      this.releaseAll(held);
    }
    this.transport.recordBatches.answered();
    return [this.resultOf(b, res.body.base_offset, res.body.log_append_time)];
  }

  private async produceJson(topic: string, batches: ProducerBatch[]): Promise<BatchResult[]> {
    const entries: WireEntry[] = [];
    batches.forEach((b, bi) =>
      b.records.forEach((r, ri) => entries.push({ id: `${bi}.${ri}`, partition_id: b.partition, ...wireEntry(r.rec) })),
    );
    const body: Record<string, unknown> = { entries };
    const id = this.identity();
    if (id) {
      body.producer_id = id.producerId;
      body.producer_epoch = id.producerEpoch;
      body.sequences = batches.map((b) => ({ partition_id: b.partition, base_sequence: b.baseSequence }));
      if (this.config.transactionalId !== undefined) body.transactional_id = this.config.transactionalId;
    }
    const res = await this.transport.request<WireBatchResponse | undefined>(
      'POST',
      `/topics/${enc(topic)}/records:batch`,
      {
        query: { acks: this.config.acks },
        body,
        topic,
        timeoutMs: this.config.requestTimeoutMs,
      },
    );
    const results: BatchResult[] = batches.map((b) => ({
      offsets: new Array(b.records.length),
      timestamps: new Array(b.records.length),
    }));
    const at = (id: string) => {
      const [bi, ri] = id.split('.').map(Number) as [number, number];
      return { r: results[bi], ri, b: batches[bi] };
    };
    for (const s of res.body?.successes ?? []) {
      const { r, ri } = at(String(s.id));
      if (!r) continue;
      r.offsets![ri] = s.offset;
      // The server reports the log append time for LogAppendTime topics, else the record's own.
      if (s.timestamp) r.timestamps![ri] = Date.parse(s.timestamp);
    }
    for (const f of res.body?.failures ?? []) {
      const { r, ri, b } = at(String(f.id));
      if (!r) continue;
      const error = errorFromBody(res.status, f, { topic, partition: b?.partition });
      (r.errors ??= [])[ri] = error;
      r.error ??= error;
    }
    return results;
  }

  /** acks, and a transactional producer's id (its record-batch requests name their transaction). */
  private query(): Record<string, string | number> {
    const txn = this.config.transactionalId;
    return { acks: this.config.acks, ...(txn !== undefined ? { transactional_id: txn } : {}) };
  }
}
