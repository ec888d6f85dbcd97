/**
 * Admin calls whose work grows with the number of partitions (find-hanging, a broker's replicas, a
 * topic's partitions, Metadata, an offset reset over a topic) walk partitions in pages and read
 * their states a bounded number at a time. Pages keep one HTTP request inside an admin function's
 * 29 s at any partition count; the bound keeps 10,000 reads from opening 10,000 sockets at once.
 */
import type { Topic } from './topics.js';

/** Where a paged walk of partitions stopped: the last partition it visited. */
export interface PartitionCursor {
  topic: string;
  partition: number;
}

export interface PartitionRef {
  topic: Topic;
  partition: number;
}

/** Partitions one paged admin request visits at most: about 1.5 s of reads at PARTITION_READS at once and 5 ms each. */
export const PARTITION_PAGE = 1000;
/** Partition states read at once by a walk. */
export const PARTITION_READS = 32;

/**
 * The partitions of `topics` in (name, partition) order after `after`, at most `max`; `next` is
 * where the following page starts, absent on the last page.
 */
export function partitionPage(
  topics: readonly Topic[],
  options: { after?: PartitionCursor; max?: number } = {},
): { page: PartitionRef[]; next?: PartitionCursor } {
  const max = Math.max(1, options.max ?? PARTITION_PAGE);
  const sorted = [...topics].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const { after } = options;
  const page: PartitionRef[] = [];
  for (const topic of sorted) {
    if (after && topic.name < after.topic) continue;
    const from = after && topic.name === after.topic ? after.partition + 1 : 0;
    for (let p = from; p < topic.partitionCount; p++) {
      if (page.length === max) {
        const last = page.at(-1)!;
        return { page, next: { topic: last.topic.name, partition: last.partition } };
      }
      page.push({ topic, partition: p });
    }
  }
  return { page };
}

/** Every partition of `topic`, in order. */
export const partitionsOf = (topic: Topic): PartitionRef[] =>
  Array.from({ length: topic.partitionCount }, (_, partition) => ({ topic, partition }));

/** `f` over `items`, at most `limit` at a time, results in order. */
export async function mapBounded<T, R>(
  items: readonly T[],
  f: (item: T) => Promise<R>,
  limit = PARTITION_READS,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let i = 0;
  const worker = async () => {
    while (i < items.length) {
      const k = i++;
      out[k] = await f(items[k]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
