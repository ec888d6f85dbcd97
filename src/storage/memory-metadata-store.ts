import {
  ConditionFailedError,
  conditionHolds,
  skMatches,
  type MetadataStore,
  type MetaItem,
  type QueryOptions,
  type WriteCondition,
} from './ports.js';

/**
 * Items in nested Maps; values are deep-copied so callers never share state with the store. It
 * stands in for DynamoDB in tests (its request counts model the AWS costs), so it has neither of
 * the embedded adapters' optional `putAll` and `changeStamp`: callers take DynamoDB's paths here.
 */
export class MemoryMetadataStore implements MetadataStore {
  private readonly partitions = new Map<string, Map<string, MetaItem>>();

  async get<T>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    const item = this.partitions.get(pk)?.get(sk);
    return item && (structuredClone(item) as MetaItem<T>);
  }

  async query<T>(pk: string, o: QueryOptions = {}): Promise<MetaItem<T>[]> {
    const sorted = this.sortedKeys(pk);
    // From the lower bound on, as a table's sort-key index reads a range (not every item of the key).
    const low = o.gte ?? o.gt ?? o.beginsWith;
    let from = 0;
    if (low !== undefined)
      for (let hi = sorted.length; from < hi; ) {
        const mid = (from + hi) >> 1;
        if (sorted[mid]! < low) from = mid + 1;
        else hi = mid;
      }
    const part = this.partitions.get(pk);
    const items: MetaItem[] = [];
    for (let i = from; i < sorted.length; i++) {
      const sk = sorted[i]!;
      if ((o.lt !== undefined && sk >= o.lt) || (o.lte !== undefined && sk > o.lte)) break;
      if (o.beginsWith !== undefined && sk > o.beginsWith && !sk.startsWith(o.beginsWith)) break;
      if (skMatches(sk, o)) items.push(part!.get(sk)!);
      if (!o.reverse && o.limit !== undefined && items.length >= o.limit) break;
    }
    if (o.reverse) items.reverse();
    return structuredClone(items.slice(0, o.limit ?? items.length)) as MetaItem<T>[];
  }

  /** Each key's sort keys in order, kept until a key is added or removed. */
  private readonly sorted = new Map<string, string[]>();
  private sortedKeys(pk: string): string[] {
    let keys = this.sorted.get(pk);
    if (!keys) {
      keys = [...(this.partitions.get(pk)?.keys() ?? [])].sort();
      this.sorted.set(pk, keys);
    }
    return keys;
  }

  async put<T>(pk: string, sk: string, value: T, condition?: WriteCondition): Promise<MetaItem<T>> {
    let part = this.partitions.get(pk);
    const current = part?.get(sk);
    if (!conditionHolds(current, condition))
      throw new ConditionFailedError(pk, sk, current && structuredClone(current));
    const item: MetaItem<T> = { pk, sk, version: (current?.version ?? 0) + 1, value: structuredClone(value) };
    if (!part) this.partitions.set(pk, (part = new Map()));
    if (!current) this.sorted.delete(pk);
    part.set(sk, item);
    return structuredClone(item);
  }

  async delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    const part = this.partitions.get(pk);
    const current = part?.get(sk);
    if (!conditionHolds(current, condition))
      throw new ConditionFailedError(pk, sk, current && structuredClone(current));
    if (current) this.sorted.delete(pk);
    part?.delete(sk);
  }
}
