/** The binary multi-partition fetch answer (wire/fetch-response.ts): round trip, views, malformed input. */
import { describe, expect, it } from 'vitest';
import { decodeFetchResponse, encodeFetchResponse, type FetchResponseTopic } from '../../src/wire/fetch-response.js';
import { isKafkaError } from '../../src/wire/errors.js';

const topics: FetchResponseTopic[] = [
  {
    topic: 'orders',
    partitions: [
      {
        partitionIndex: 0,
        errorCode: 0,
        error: null,
        errorMessage: null,
        highWatermark: 2 ** 40,
        lastStableOffset: 2 ** 40 - 3,
        logStartOffset: 7,
        nextOffset: 2 ** 40,
        abortedTransactions: [{ producerId: 9, firstOffset: 10, lastOffset: 12 }],
        records: Buffer.from([1, 2, 3, 4, 5]),
      },
      {
        partitionIndex: 4,
        errorCode: 1,
        error: 'OFFSET_OUT_OF_RANGE',
        errorMessage: 'Offset 99 is out of range — ü',
        highWatermark: -1,
        lastStableOffset: -1,
        logStartOffset: -1,
        nextOffset: 99,
        abortedTransactions: null,
        records: null,
      },
    ],
  },
  { topic: 'ünïcode', partitions: [] },
];

describe('binary fetch response', () => {
  it('decodes what it encodes, records as views into the answer', () => {
    const bytes = encodeFetchResponse(topics);
    const decoded = decodeFetchResponse(bytes);
    expect(decoded).toEqual(topics);
    const records = decoded[0]!.partitions[0]!.records!;
    expect(records.buffer).toBe(bytes.buffer); // not a copy
  });

  it('rejects a truncated answer or trailing bytes with CORRUPT_MESSAGE', () => {
    const bytes = encodeFetchResponse(topics);
    for (const bad of [
      bytes.subarray(0, bytes.byteLength - 1),
      bytes.subarray(0, 10),
      Buffer.concat([bytes, Buffer.from([0])]),
    ]) {
      let caught: unknown;
      try {
        decodeFetchResponse(bad);
      } catch (e) {
        caught = e;
      }
      expect(isKafkaError(caught, 'CORRUPT_MESSAGE')).toBe(true);
    }
  });
});
