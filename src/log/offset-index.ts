import { withinEpoch } from '../replication/epoch-history.js';
import type { MetadataStore } from '../storage/ports.js';
import { partitionPk, type CommitRecord, type PartitionState } from './partition-state.js';

/**
 * The offset index: one item per commit (sk `idx#{baseOffset, 20 digits}`), the equivalent of
 * Kafka's sparse offset index with one entry per append. Zero padding keeps sort order = offset order.
 */
export const indexSk = (baseOffset: number) => `idx#${String(baseOffset).padStart(20, '0')}`;
const IDX_PREFIX = 'idx#';

export class OffsetIndex {
  constructor(private readonly metadata: MetadataStore) {}

  /** Idempotent: the same commit always writes the same entry, so repair and retry are harmless. */
  async put(topic: string, partition: number, entry: CommitRecord): Promise<void> {
    await this.metadata.put(partitionPk(topic, partition), indexSk(entry.baseOffset), entry);
  }

  async exists(topic: string, partition: number, baseOffset: number): Promise<boolean> {
    return (await this.metadata.get(partitionPk(topic, partition), indexSk(baseOffset))) !== undefined;
  }

  /**
   * Entries covering offsets [from, to) in order, starting with the one that contains `from`,
   * stopping once `maxBytes` worth of entries is collected (at least one entry, as Kafka returns at
   * least one batch so a consumer always progresses). The last commit of `state` fills the tail if
   * its index write has not landed yet, and is written back (the repair of DESIGN.md step 4).
   */
  async entriesFrom(topic: string, partition: number, state: PartitionState, from: number, to: number, maxBytes: number): Promise<CommitRecord[]> {
    const out: CommitRecord[] = [];
    let next = from;
    let bytes = 0;
    for await (const e of this.scan(topic, partition, state.topicId, from, to, (e) => withinEpoch(state.epochHistory, e))) {
      if (e.lastOffset < next) continue; // covered already (e.g. old entries a segment swap replaced)
      if (e.baseOffset > next) break; // a gap: only the last commit may be missing, handled below
      out.push(e);
      bytes += e.end - e.start;
      next = e.lastOffset + 1;
      if (next >= to || bytes >= maxBytes) return out;
    }
    const last = state.lastCommit;
    if (next < to && last && last.topicId === state.topicId && last.baseOffset === next) {
      await this.put(topic, partition, last);
      out.push(last);
    }
    return out;
  }

  /**
   * Index entries of one topic incarnation in offset order, from the entry containing `from` up to
   * (not including) entries starting at `to`. The floor lookup and the first page run in parallel.
   * `accept` filters further (e.g. entries truncated by a leader change).
   */
  async *scan(
    topic: string,
    partition: number,
    topicId: string,
    from: number,
    to: number,
    accept: (e: CommitRecord) => boolean = () => true,
    pageSize = 64,
  ): AsyncGenerator<CommitRecord> {
    const pk = partitionPk(topic, partition);
    const own = (e: CommitRecord) => e.topicId === topicId && accept(e);
    const [floorItems, first] = await Promise.all([
      this.metadata.query<CommitRecord>(pk, { lte: indexSk(from), gte: IDX_PREFIX, reverse: true, limit: 4 }),
      this.metadata.query<CommitRecord>(pk, { gt: indexSk(from), lt: indexSk(to), limit: pageSize }),
    ]);
    const floor = floorItems.map((i) => i.value).find(own);
    if (floor && floor.lastOffset >= from) yield floor;
    let page = first;
    for (;;) {
      for (const item of page) if (own(item.value)) yield item.value;
      if (page.length < pageSize) return;
      page = await this.metadata.query<CommitRecord>(pk, { gt: page.at(-1)!.sk, lt: indexSk(to), limit: pageSize });
    }
  }
}
