import type { AlongsideItem, MetadataStore, MetaItem, PutOptions, QueryOptions, WriteCondition } from './ports.js';

/** A metadata store that holds a connection (SQLite): `close()` releases it. */
export interface ClosableMetadataStore extends MetadataStore {
  close(): void;
}

/**
 * A metadata store that is still being opened: every call waits for it, then goes straight
 * through. The composition root hands out the embedded backend synchronously with it while the
 * SQLite adapter's module is imported on demand. A failure to open rejects every call (and
 * `ready`); it is never an unhandled rejection. `close()` before the store is open closes it as
 * soon as it is.
 */
export class DeferredMetadataStore implements ClosableMetadataStore {
  /** Resolves once the store is open; rejects with the reason it could not be opened. */
  readonly ready: Promise<void>;
  private store: ClosableMetadataStore | undefined;
  private closed = false;

  constructor(private readonly opening: Promise<ClosableMetadataStore>) {
    this.ready = opening.then((store) => {
      this.store = store;
      if (this.closed) store.close();
    });
    this.ready.catch(() => {}); // reported to each caller instead
  }

  async get<T = unknown>(pk: string, sk: string): Promise<MetaItem<T> | undefined> {
    return (this.store ?? (await this.opening)).get<T>(pk, sk);
  }

  async query<T = unknown>(pk: string, options?: QueryOptions): Promise<MetaItem<T>[]> {
    return (this.store ?? (await this.opening)).query<T>(pk, options);
  }

  async put<T>(
    pk: string,
    sk: string,
    value: T,
    condition?: WriteCondition,
    options?: PutOptions,
  ): Promise<MetaItem<T>> {
    return (this.store ?? (await this.opening)).put(pk, sk, value, condition, options);
  }

  /** The store it opens is SQLite's, which has `putAll`. */
  async putAll<T>(
    pk: string,
    sk: string,
    value: T,
    condition: WriteCondition | undefined,
    alongside: AlongsideItem[],
  ): Promise<MetaItem<T>> {
    const store = this.store ?? (await this.opening);
    if (!store.putAll) throw new Error('The deferred metadata store opened a store without putAll');
    return store.putAll(pk, sk, value, condition, alongside);
  }

  async delete(pk: string, sk: string, condition?: { ifVersion: number }): Promise<void> {
    return (this.store ?? (await this.opening)).delete(pk, sk, condition);
  }

  /** Unknown until the store is open. */
  changeStamp(pk: string): string | undefined {
    return this.store?.changeStamp?.(pk);
  }

  close(): void {
    this.closed = true;
    this.store?.close();
  }
}
