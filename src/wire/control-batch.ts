/**
 * Transaction markers as Kafka writes them (EndTransactionMarker in a control batch): a v2 batch
 * with the transactional and control attribute bits, the producer's id and epoch, base sequence -1,
 * and one record whose key is `version int16 = 0, type int16` (0 ABORT, 1 COMMIT) and whose value
 * is `version int16 = 0, coordinatorEpoch int32`.
 */
import { KafkaError } from './errors.js';
import { CONTROL_FLAG_MASK, encodeRecordBatch, type DecodedBatch } from './record-batch.js';

export const CONTROL_TYPE = { ABORT: 0, COMMIT: 1 } as const;

export interface Marker {
  type: 'COMMIT' | 'ABORT';
  producerId: number;
  producerEpoch: number;
  coordinatorEpoch: number;
}

export function encodeMarkerBatch(marker: Marker, timestamp: number): Uint8Array {
  const key = new Uint8Array(4);
  const kv = new DataView(key.buffer);
  kv.setInt16(0, 0);
  kv.setInt16(2, CONTROL_TYPE[marker.type]);
  const value = new Uint8Array(6);
  const vv = new DataView(value.buffer);
  vv.setInt16(0, 0);
  vv.setInt32(2, marker.coordinatorEpoch);
  return encodeRecordBatch([{ key, value, headers: [], timestamp }], {
    producerId: marker.producerId,
    producerEpoch: marker.producerEpoch,
    baseSequence: -1,
    transactional: true,
    control: true,
  });
}

/** The marker a control batch holds; CORRUPT_MESSAGE for a control batch that holds none. */
export function decodeMarker(batch: DecodedBatch): Marker {
  const record = batch.records[0];
  if ((batch.header.attributes & CONTROL_FLAG_MASK) === 0 || !record?.key || record.key.byteLength < 4) {
    throw new KafkaError('CORRUPT_MESSAGE', 'Not a transaction marker batch');
  }
  const key = new DataView(record.key.buffer, record.key.byteOffset, record.key.byteLength);
  const type = key.getInt16(2);
  const value =
    record.value && record.value.byteLength >= 6
      ? new DataView(record.value.buffer, record.value.byteOffset, record.value.byteLength)
      : undefined;
  return {
    type: type === CONTROL_TYPE.COMMIT ? 'COMMIT' : 'ABORT',
    producerId: batch.header.producerId,
    producerEpoch: batch.header.producerEpoch,
    coordinatorEpoch: value ? value.getInt32(2) : 0,
  };
}
