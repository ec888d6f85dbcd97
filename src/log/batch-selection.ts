/**
 * Which stored batches a fetch answers with (Kafka's fetch bounds over loaded entries), and their
 * bytes as the answer sends them: runs of adjacent batches as views, joined without a copy when
 * one GET read them.
 */
import { KafkaError } from '../wire/errors.js';
import type { CommitRecord } from '../partition/partition-state.js';
import { LOG_OVERHEAD, readBatchHeader, TRANSACTIONAL_FLAG_MASK } from '../wire/record-batch.js';
import type { RoomBatch } from './aborted-room.js';

/** A stored batch a fetch answers with: where it lies in the loaded bytes, and its absolute offsets. */
export interface SelectedBatch extends RoomBatch {
  entry: CommitRecord;
  data: Uint8Array;
  at: number;
}

/**
 * Kafka's fetch bounds over the loaded entries: batches from the one holding `offset`, below the
 * HW, whole, as many as fit in `maxBytes` (at least one, however large, as Kafka answers so that
 * a consumer always progresses), never past `limitBytes`. Entries may be larger than the budget
 * (one produce request is one entry), so the bounds apply per batch, not per entry.
 */
export function selectBatches(
  loaded: { entry: CommitRecord; data: Uint8Array }[],
  offset: number,
  hw: number,
  maxBytes: number,
  limitBytes = Infinity,
  atLeastOne = true,
) {
  const batches: SelectedBatch[] = [];
  let nextOffset = offset;
  let bytes = 0;
  for (const { entry, data } of loaded) {
    for (let at = 0; at < data.byteLength; ) {
      const header = readBatchHeader(data, at);
      const size = LOG_OVERHEAD + header.batchLength;
      const base = entry.baseOffset + header.baseOffset;
      const last = base + header.lastOffsetDelta;
      if (last >= hw) return { batches, nextOffset, bytes };
      if (last >= offset) {
        if (bytes + size > limitBytes) {
          if (batches.length > 0 || !atLeastOne) return { batches, nextOffset, bytes };
          throw new KafkaError(
            'MESSAGE_TOO_LARGE',
            `The record batch at offset ${base} is ${size} bytes, more than this deployment can answer (${limitBytes}); fetch it in JSON`,
          );
        }
        if ((batches.length > 0 || !atLeastOne) && bytes + size > maxBytes) return { batches, nextOffset, bytes };
        batches.push({
          entry,
          data,
          at,
          size,
          base,
          last,
          producerId: header.producerId,
          transactional: (header.attributes & TRANSACTIONAL_FLAG_MASK) !== 0,
        });
        bytes += size;
        nextOffset = last + 1;
      }
      at += size;
    }
    // A compacted entry may end in removed records: the next fetch starts after the entry.
    nextOffset = Math.max(nextOffset, Math.min(hw, entry.lastOffset + 1));
  }
  return { batches, nextOffset, bytes };
}

/** The selected batches as byte spans, one per run of batches lying end to end in one buffer. */
export function spans(batches: SelectedBatch[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let i = 0;
  while (i < batches.length) {
    const first = batches[i]!;
    let end = first.at + first.size;
    while (i + 1 < batches.length && batches[i + 1]!.data === first.data && batches[i + 1]!.at === end)
      end += batches[++i]!.size;
    out.push(first.data.subarray(first.at, end));
    i++;
  }
  return out;
}

/** The parts as one array: a view when they lie end to end in one buffer (entries read by one GET), else a copy. */
export function joinViews(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const first = parts[0];
  const adjacent = parts.every(
    (p, i) =>
      i === 0 || (p.buffer === first!.buffer && p.byteOffset === parts[i - 1]!.byteOffset + parts[i - 1]!.byteLength),
  );
  if (first && adjacent)
    return new Uint8Array(
      first.buffer,
      first.byteOffset,
      parts.reduce((n, p) => n + p.byteLength, 0),
    );
  return Buffer.concat(parts);
}
