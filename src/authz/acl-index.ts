/**
 * Kafka's authorization decision over a set of ACLs (as kafka.security.authorizer.AclAuthorizer
 * decides it): super users may do everything; a resource no ACL matches is allowed only with
 * allow.everyone.if.no.acl.found; otherwise a matching DENY wins over any ALLOW, and an ALLOW for
 * the operation, for ALL, or for an operation that implies it (READ, WRITE, DELETE and ALTER imply
 * DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) grants it.
 */
import {
  patternMatches,
  WILDCARD_HOST,
  WILDCARD_PRINCIPAL,
  WILDCARD_RESOURCE,
  type AclBinding,
  type Operation,
  type ResourceType,
} from './acl.js';
import { principalMatchKey } from './principal.js';

export interface AuthorizerSettings {
  /** Kafka's super.users: principals allowed everything, whatever the ACLs say. */
  superUsers: ReadonlySet<string>;
  /** Kafka's allow.everyone.if.no.acl.found. */
  allowEveryoneIfNoAclFound: boolean;
}

/** What a request asks for: who, from where, which operation on which resource. */
export interface AccessRequest {
  principal: string;
  host: string;
  operation: Operation;
  resourceType: ResourceType;
  resourceName: string;
}

/** The operations whose ALLOW grants `op` (besides ALL). */
const IMPLIED_BY: Partial<Record<Operation, readonly Operation[]>> = {
  DESCRIBE: ['DESCRIBE', 'READ', 'WRITE', 'DELETE', 'ALTER'],
  DESCRIBE_CONFIGS: ['DESCRIBE_CONFIGS', 'ALTER_CONFIGS'],
};

interface TypeIndex {
  literal: Map<string, AclBinding[]>;
  wildcard: AclBinding[];
  prefixed: AclBinding[];
  all: AclBinding[];
}

/** `principalKey` is the asker's principalMatchKey: a role matches ACLs naming it with or without its path. */
const appliesTo = (acl: AclBinding, principalKey: string, host: string) =>
  (acl.principal === WILDCARD_PRINCIPAL || principalMatchKey(acl.principal) === principalKey) &&
  (acl.host === WILDCARD_HOST || acl.host === host);

/** An immutable set of ACLs, indexed by resource type and pattern for the decision. */
export class AclIndex {
  private readonly byType = new Map<ResourceType, TypeIndex>();
  /** Decisions already made against this set: the hot path (every produce) is one map lookup. */
  private readonly decisions = new Map<string, boolean>();
  /** The super users in the form principals are compared in. */
  private readonly superUsers: ReadonlySet<string>;

  constructor(
    readonly acls: readonly AclBinding[],
    private readonly settings: AuthorizerSettings,
  ) {
    this.superUsers = new Set([...settings.superUsers].map(principalMatchKey));
    for (const acl of acls) {
      let t = this.byType.get(acl.resourceType);
      if (!t) {
        t = { literal: new Map(), wildcard: [], prefixed: [], all: [] };
        this.byType.set(acl.resourceType, t);
      }
      t.all.push(acl);
      if (acl.patternType === 'PREFIXED') t.prefixed.push(acl);
      else if (acl.resourceName === WILDCARD_RESOURCE) t.wildcard.push(acl);
      else {
        const list = t.literal.get(acl.resourceName);
        if (list) list.push(acl);
        else t.literal.set(acl.resourceName, [acl]);
      }
    }
  }

  authorize(r: AccessRequest): boolean {
    const key = `${r.principal}\u0000${r.host}\u0000${r.operation}\u0000${r.resourceType}\u0000${r.resourceName}`;
    const known = this.decisions.get(key);
    if (known !== undefined) return known;
    const allowed = this.decide(r);
    if (this.decisions.size >= 50_000) this.decisions.clear(); // a bound, not an LRU: refilling is cheap
    this.decisions.set(key, allowed);
    return allowed;
  }

  private decide(r: AccessRequest): boolean {
    const principalKey = principalMatchKey(r.principal);
    if (this.superUsers.has(principalKey)) return true;
    const matching = this.matching(r.resourceType, r.resourceName);
    if (matching.length === 0) return this.settings.allowEveryoneIfNoAclFound;
    const mine = matching.filter((a) => appliesTo(a, principalKey, r.host));
    if (mine.some((a) => a.permission === 'DENY' && (a.operation === r.operation || a.operation === 'ALL')))
      return false;
    const grants = IMPLIED_BY[r.operation] ?? [r.operation];
    return mine.some((a) => a.permission === 'ALLOW' && (a.operation === 'ALL' || grants.includes(a.operation)));
  }

  /** Every ACL whose pattern applies to the resource, whoever it names. */
  private matching(type: ResourceType, name: string): AclBinding[] {
    const t = this.byType.get(type);
    if (!t) return [];
    const out = [...(t.literal.get(name) ?? []), ...t.wildcard];
    for (const a of t.prefixed) if (patternMatches('PREFIXED', a.resourceName, name)) out.push(a);
    return out;
  }

  /**
   * Kafka's authorizeByResourceType (KIP-679): may the principal do `op` on at least one resource
   * of the type? True when some ALLOW for it is not covered by a DENY (a DENY on '*', the same
   * literal name, or a prefix of the allowed name or prefix). InitProducerId without a
   * transactional id asks this for WRITE on TOPIC.
   */
  authorizeAny(principal: string, host: string, op: Operation, type: ResourceType): boolean {
    const principalKey = principalMatchKey(principal);
    if (this.superUsers.has(principalKey)) return true;
    const all = this.byType.get(type)?.all ?? [];
    if (all.length === 0) return this.settings.allowEveryoneIfNoAclFound;
    const mine = all.filter((a) => appliesTo(a, principalKey, host) && (a.operation === op || a.operation === 'ALL'));
    const denies = mine.filter((a) => a.permission === 'DENY');
    if (denies.some((d) => d.patternType === 'LITERAL' && d.resourceName === WILDCARD_RESOURCE)) return false;
    const covered = (a: AclBinding) =>
      denies.some((d) =>
        d.patternType === 'PREFIXED'
          ? a.resourceName.startsWith(d.resourceName)
          : a.patternType === 'LITERAL' && d.resourceName === a.resourceName,
      );
    return mine.some((a) => a.permission === 'ALLOW' && !covered(a));
  }
}
