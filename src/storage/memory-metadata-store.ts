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
    const items = [...(this.partitions.get(pk)?.values() ?? [])]
      .filter((i) => skMatches(i.sk, o))
      .sort((a, b) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0));
    if (o.reverse) items.reverse();
    return structuredClone(items.slice(0, o.limit ?? items.length)) as MetaItem<T>[];
  }

  async put<T>(pk: string, sk: string, value: T, condition?: WriteCondition): Promise<MetaItem<T>> {
    let part = this.partitions.get(pk);
    const current = part?.get(sk);
    if (!conditionHolds(current, condition))
      throw new ConditionFailedError(pk, sk, current && structuredClone(current));
    const item: MetaItem<T> = { pk, sk, version: (current?.version ?? 0) + 1, value: structuredClone(value) };
    if (!part) this.partitions.set(pk, (part = new Map()));
    part.set(sk, item);
    return structuredClone(item);
  }

  async delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    const part = this.partitions.get(pk);
    const current = part?.get(sk);
    if (!conditionHolds(current, condition))
      throw new ConditionFailedError(pk, sk, current && structuredClone(current));
    part?.delete(sk);
  }
}
