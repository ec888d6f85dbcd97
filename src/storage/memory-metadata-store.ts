import {
  ConditionFailedError,
  conditionHolds,
  skMatches,
  type AlongsideItem,
  type MetadataStore,
  type MetaItem,
  type QueryOptions,
  type WriteCondition,
} from './ports.js';
import { ChangeCounters } from './change-counters.js';

/** Items in nested Maps; values are deep-copied so callers never share state with the store. */
export class MemoryMetadataStore implements MetadataStore {
  private readonly partitions = new Map<string, Map<string, MetaItem>>();
  /** One store per process: every change goes through here, so counting them is the whole stamp. */
  private readonly changes = new ChangeCounters();

  changeStamp(pk: string): string {
    return String(this.changes.of(pk));
  }

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
    return this.putNow(pk, sk, value, condition);
  }

  /** Synchronous: no other call runs between the first item and the rest. */
  async putAll<T>(
    pk: string,
    sk: string,
    value: T,
    condition: WriteCondition | undefined,
    alongside: AlongsideItem[],
  ): Promise<MetaItem<T>> {
    const item = this.putNow(pk, sk, value, condition);
    for (const a of alongside) this.putNow(pk, a.sk, a.value, undefined);
    return item;
  }

  private putNow<T>(pk: string, sk: string, value: T, condition: WriteCondition | undefined): MetaItem<T> {
    let part = this.partitions.get(pk);
    const current = part?.get(sk);
    if (!conditionHolds(current, condition))
      throw new ConditionFailedError(pk, sk, current && structuredClone(current));
    const item: MetaItem<T> = { pk, sk, version: (current?.version ?? 0) + 1, value: structuredClone(value) };
    if (!part) this.partitions.set(pk, (part = new Map()));
    part.set(sk, item);
    this.changes.bump(pk);
    return structuredClone(item);
  }

  async delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    const part = this.partitions.get(pk);
    const current = part?.get(sk);
    if (!conditionHolds(current, condition))
      throw new ConditionFailedError(pk, sk, current && structuredClone(current));
    if (part?.delete(sk)) this.changes.bump(pk);
  }
}
