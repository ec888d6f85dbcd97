/**
 * The framing of a multi-partition produce body: Kafka's ProduceRequest `topic_data` field as the
 * protocol lays it out (versions 3-8, not flexible), so a Kafka protocol listener and the HTTP
 * route share one codec:
 *
 *   topic_data      => INT32 count, then per topic:
 *     name          => INT16 length, UTF-8 bytes
 *     partition_data => INT32 count, then per partition:
 *       index       => INT32
 *       records     => INT32 length (-1: null), then that many bytes of RecordBatch v2
 *
 * Big-endian, as all of Kafka's protocol. The request's acks and timeout travel beside it (the
 * HTTP route takes acks as a query parameter).
 */
import { KafkaError } from './errors.js';

export interface PartitionData {
  index: number;
  /** Record batches (a view into the request body, not a copy); null as Kafka allows it. */
  records: Uint8Array | null;
}

export interface TopicData {
  name: string;
  partitions: PartitionData[];
}

export const PRODUCE_REQUEST_MEDIA_TYPE = 'application/vnd.kafka.produce-request';

const invalid = (message: string) => new KafkaError('INVALID_REQUEST', `Malformed topic_data: ${message}`);

/** `topic_data` as parts to write one after the other: the fields in small buffers, the batches as they are (no copy). */
export function encodeTopicDataParts(topics: readonly TopicData[]): Uint8Array[] {
  const parts: Uint8Array[] = [];
  const count = Buffer.allocUnsafe(4);
  count.writeInt32BE(topics.length, 0);
  parts.push(count);
  for (const t of topics) {
    const name = Buffer.from(t.name, 'utf8');
    const head = Buffer.allocUnsafe(2 + name.byteLength + 4);
    let at = head.writeInt16BE(name.byteLength, 0);
    at += name.copy(head, at);
    head.writeInt32BE(t.partitions.length, at);
    parts.push(head);
    for (const p of t.partitions) {
      const fields = Buffer.allocUnsafe(8);
      fields.writeInt32BE(p.index, 0);
      fields.writeInt32BE(p.records === null ? -1 : p.records.byteLength, 4);
      parts.push(fields);
      if (p.records !== null && p.records.byteLength > 0) parts.push(p.records);
    }
  }
  return parts;
}

/** `topic_data` in one buffer. */
export const encodeTopicData = (topics: readonly TopicData[]): Uint8Array =>
  Buffer.concat(encodeTopicDataParts(topics));

/** Decodes `topic_data`; records are views into `bytes`. INVALID_REQUEST for anything malformed or left over. */
export function decodeTopicData(bytes: Uint8Array): TopicData[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const need = (n: number, what: string) => {
    if (n < 0 || at + n > bytes.byteLength) throw invalid(`${what} at byte ${at} runs past the end of the body`);
  };
  const int32 = (what: string) => {
    need(4, what);
    const v = view.getInt32(at);
    at += 4;
    return v;
  };
  const topicCount = int32('the topic count');
  if (topicCount < 0) throw invalid('negative topic count');
  const topics: TopicData[] = [];
  for (let t = 0; t < topicCount; t++) {
    need(2, 'a topic name length');
    const nameLength = view.getInt16(at);
    at += 2;
    need(nameLength, 'a topic name');
    const name = Buffer.from(bytes.buffer, bytes.byteOffset + at, nameLength).toString('utf8');
    at += nameLength;
    const partitionCount = int32('a partition count');
    if (partitionCount < 0) throw invalid(`negative partition count for topic ${name}`);
    const partitions: PartitionData[] = [];
    for (let p = 0; p < partitionCount; p++) {
      const index = int32('a partition index');
      const length = int32('a records length');
      if (length === -1) {
        partitions.push({ index, records: null });
        continue;
      }
      need(length, `the records of ${name}-${index}`);
      partitions.push({ index, records: bytes.subarray(at, at + length) });
      at += length;
    }
    topics.push({ name, partitions });
  }
  if (at !== bytes.byteLength) throw invalid(`${bytes.byteLength - at} bytes after the last topic`);
  return topics;
}
