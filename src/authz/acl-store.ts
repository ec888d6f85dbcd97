/**
 * ACLs in the metadata store: one item per ACL under pk `acl` (sk: the ACL's own fields), so the
 * whole set is one query and creating an ACL twice writes one item. Each process keeps the set for
 * a short bound (`cacheMs`, default 5 s) and drops it at once when it changes an ACL itself: a
 * change made by another Lambda instance applies everywhere within that bound, as a change on one
 * Kafka broker reaches the others after its metadata propagates.
 */
import type { Clock } from '../clock.js';
import { ACL_PK } from '../storage/key-layout.js';
import type { MetadataStore } from '../storage/ports.js';
import { bindingKey, filterMatches, type AclBinding, type AclFilter } from './acl.js';
import { AclIndex, type AuthorizerSettings } from './acl-index.js';

export class AclStore {
  private cached: { at: number; index: Promise<AclIndex> } | undefined;

  constructor(
    private readonly metadata: MetadataStore,
    private readonly clock: Clock,
    private readonly settings: AuthorizerSettings,
    private readonly cacheMs = 5000,
  ) {}

  /** The current ACL set, indexed; read again at most every `cacheMs`. */
  index(): Promise<AclIndex> {
    const now = this.clock.now();
    if (this.cached && now - this.cached.at < this.cacheMs) return this.cached.index;
    const index = this.load();
    this.cached = { at: now, index };
    // A failed read is not kept: the next request tries again.
    index.catch(() => {
      if (this.cached?.index === index) this.cached = undefined;
    });
    return index;
  }

  async list(filter: AclFilter = {}): Promise<AclBinding[]> {
    return (await this.read()).filter((b) => filterMatches(filter, b));
  }

  /** Creates ACLs; one that exists already is left as it is. */
  async create(bindings: AclBinding[]): Promise<void> {
    try {
      // Unconditional: the same ACL is the same item, so a retry or a concurrent create is harmless.
      for (const b of bindings) await this.metadata.put(ACL_PK, bindingKey(b), b);
    } finally {
      this.cached = undefined;
    }
  }

  /** Deletes the ACLs a filter matches and returns them (Kafka's DeleteAcls). */
  async delete(filter: AclFilter): Promise<AclBinding[]> {
    const doomed = await this.list(filter);
    try {
      for (const b of doomed) await this.metadata.delete(ACL_PK, bindingKey(b));
    } finally {
      this.cached = undefined;
    }
    return doomed;
  }

  private async read(): Promise<AclBinding[]> {
    return (await this.metadata.query<AclBinding>(ACL_PK)).map((i) => i.value);
  }

  private async load(): Promise<AclIndex> {
    return new AclIndex(await this.read(), this.settings);
  }
}
