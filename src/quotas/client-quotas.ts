/**
 * Kafka's client quotas (KIP-13, KIP-55, KIP-546): a rate per user, per client id, or per both,
 * with defaults (`<default>`, here a null name) at each level. The most specific entity that sets
 * a quota key applies, in Kafka's order:
 *   user+client, user+default client, user, default user+client, default user+default client,
 *   default user, client, default client.
 * Items live under pk `quota` (one per entity), cached like the ACLs.
 */
import type { Clock } from '../clock.js';
import { KafkaError } from '../wire/errors.js';
import { QUOTA_PK } from '../storage/key-layout.js';
import { holdsWrite, optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore } from '../storage/ports.js';

export const QUOTA_KEYS = ['producer_byte_rate', 'consumer_byte_rate', 'request_percentage'] as const;
export type QuotaKey = (typeof QUOTA_KEYS)[number];

/** A quota entity: a component absent is not part of it; a null name is that level's default. */
export interface QuotaEntity {
  user?: string | null;
  'client-id'?: string | null;
}

export interface ClientQuota {
  entity: QuotaEntity;
  values: Partial<Record<QuotaKey, number>>;
}

export const isQuotaKey = (k: string): k is QuotaKey => (QUOTA_KEYS as readonly string[]).includes(k);

export function entityKey(e: QuotaEntity): string {
  const part = (type: keyof QuotaEntity) =>
    e[type] === undefined ? [] : [`${type}=${e[type] === null ? '<default>' : encodeURIComponent(e[type]!)}`];
  return [...part('user'), ...part('client-id')].join(',');
}

export function validateEntity(e: QuotaEntity): QuotaEntity {
  if (e.user === undefined && e['client-id'] === undefined)
    throw new KafkaError('INVALID_REQUEST', 'A quota entity names a user, a client-id or both');
  for (const v of [e.user, e['client-id']])
    if (v === '') throw new KafkaError('INVALID_REQUEST', 'An entity name is non-empty (null for the default)');
  return e;
}

export function validateQuotaValue(key: string, value: unknown): number {
  if (!isQuotaKey(key))
    throw new KafkaError('INVALID_REQUEST', `Unknown quota ${key}; known: ${QUOTA_KEYS.join(', ')}`);
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0)
    throw new KafkaError('INVALID_REQUEST', `${key} must be a positive number`);
  return value;
}

/** The quota that applies to a request, and which bucket counts it (Kafka's quota metric tags). */
export interface AppliedQuota {
  rate: number;
  bucket: string;
}

/** Kafka's eight levels, most specific first: [user component, client component] of the entity. */
const LEVELS: readonly (readonly ['exact' | 'default' | 'none', 'exact' | 'default' | 'none'])[] = [
  ['exact', 'exact'],
  ['exact', 'default'],
  ['exact', 'none'],
  ['default', 'exact'],
  ['default', 'default'],
  ['default', 'none'],
  ['none', 'exact'],
  ['none', 'default'],
];

/** An immutable set of quotas with its resolutions memoised per (user, client id). */
export class QuotaIndex {
  private readonly byEntity = new Map<string, ClientQuota>();
  private readonly resolved = new Map<string, Partial<Record<QuotaKey, AppliedQuota>>>();

  constructor(readonly quotas: readonly ClientQuota[]) {
    for (const q of quotas) this.byEntity.set(entityKey(q.entity), q);
  }

  get empty(): boolean {
    return this.byEntity.size === 0;
  }

  resolve(user: string, clientId: string): Partial<Record<QuotaKey, AppliedQuota>> {
    const memo = `${user}\u0000${clientId}`;
    let r = this.resolved.get(memo);
    if (r) return r;
    r = {};
    for (const key of QUOTA_KEYS) {
      for (const [u, c] of LEVELS) {
        const entity: QuotaEntity = {};
        if (u !== 'none') entity.user = u === 'exact' ? user : null;
        if (c !== 'none') entity['client-id'] = c === 'exact' ? clientId : null;
        const rate = this.byEntity.get(entityKey(entity))?.values[key];
        if (rate === undefined) continue;
        // A default level counts each user (client) on its own: the tags are the caller's own names.
        const tags = [u === 'none' ? '' : `user=${user}`, c === 'none' ? '' : `client-id=${clientId}`].join('\u0000');
        r[key] = { rate, bucket: `${key}\u0000${tags}` };
        break;
      }
    }
    if (this.resolved.size >= 10_000) this.resolved.clear();
    this.resolved.set(memo, r);
    return r;
  }
}

export class QuotaStore {
  private cached: { at: number; index: Promise<QuotaIndex> } | undefined;

  constructor(
    private readonly metadata: MetadataStore,
    private readonly clock: Clock,
    private readonly cacheMs = 5000,
  ) {}

  index(): Promise<QuotaIndex> {
    const now = this.clock.now();
    if (this.cached && now - this.cached.at < this.cacheMs) return this.cached.index;
    const index = this.list().then((q) => new QuotaIndex(q));
    this.cached = { at: now, index };
    index.catch(() => {
      if (this.cached?.index === index) this.cached = undefined;
    });
    return index;
  }

  async list(): Promise<ClientQuota[]> {
    return (await this.metadata.query<ClientQuota>(QUOTA_PK)).map((i) => i.value);
  }

  /**
   * Kafka's AlterClientQuotas for one entity: sets and removes keys; an entity left with none is
   * deleted. Setting a value is idempotent, so a write that applied with its answer lost is
   * recognised by its value and not applied twice.
   */
  async alter(
    entity: QuotaEntity,
    set: Partial<Record<QuotaKey, number>>,
    remove: QuotaKey[],
  ): Promise<ClientQuota | undefined> {
    validateEntity(entity);
    try {
      const { result } = await optimisticUpdate<ClientQuota, ClientQuota | undefined>({
        metadata: this.metadata,
        pk: QUOTA_PK,
        sk: entityKey(entity),
        decide: (current) => {
          const values = { ...current?.value.values, ...set };
          for (const k of remove) delete values[k];
          if (Object.keys(values).length > 0) return { write: { entity, values }, answer: (w) => w.value };
          return current ? { remove: true, answer: () => undefined } : { done: undefined };
        },
        recognise: (found, attempted) => (holdsWrite(found, attempted) ? found.value : undefined),
        giveUp: {
          errorName: 'REQUEST_TIMED_OUT',
          message: `Too many concurrent changes to the quotas of ${entityKey(entity)}; retry`,
        },
      });
      return result;
    } finally {
      this.cached = undefined;
    }
  }
}
