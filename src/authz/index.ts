/**
 * Who may do what: principals, Kafka's ACLs and client quotas, wired over the metadata store.
 * The HTTP layer (src/http/security.ts) resolves each request's principal and asks these.
 */
import type { Clock } from '../clock.js';
import type { SecurityConfig } from '../config/server-config.js';
import type { MetadataStore } from '../storage/ports.js';
import { QuotaStore } from '../quotas/client-quotas.js';
import { QuotaBuckets } from '../quotas/throttle.js';
import { AclStore } from './acl-store.js';
import { ScramCredentialStore } from './scram-store.js';
import type { PrincipalOptions } from './principal.js';

export interface Security {
  /** Whether ACLs are enforced; the ACL admin works either way, so ACLs can be set before turning it on. */
  authorization: boolean;
  acls: AclStore;
  quotas: QuotaStore;
  buckets: QuotaBuckets;
  principals: PrincipalOptions;
  /** SCRAM credentials (hashed, as Kafka stores them) for the Kafka listener's SASL/SCRAM. */
  scram: ScramCredentialStore;
}

export function createSecurity(config: SecurityConfig, metadata: MetadataStore, clock: Clock): Security {
  return {
    authorization: config.authorization,
    acls: new AclStore(
      metadata,
      clock,
      { superUsers: new Set(config.superUsers), allowEveryoneIfNoAclFound: config.allowEveryoneIfNoAclFound },
      config.cacheMs,
    ),
    quotas: new QuotaStore(metadata, clock, config.cacheMs),
    buckets: new QuotaBuckets(clock),
    principals: {
      claim: config.principalClaim,
      tokens: new Map(Object.entries(config.tokens)),
      plainUsers: new Map(Object.entries(config.plainUsers)),
      saslMechanisms: config.saslMechanisms,
    },
    scram: new ScramCredentialStore(metadata),
  };
}
