/** Kafka's authorization decision over ACLs, without HTTP: the rules AclAuthorizer applies. */
import { describe, expect, it } from 'vitest';
import { filterMatches, validateBinding, validateFilter, type AclBinding } from '../../src/authz/acl.js';
import { AclIndex } from '../../src/authz/acl-index.js';
import { gatewayPrincipal, iamPrincipalName } from '../../src/authz/principal.js';
import { QuotaIndex } from '../../src/quotas/client-quotas.js';
import { QuotaBuckets, ThrottledError } from '../../src/quotas/throttle.js';

const acl = (a: Partial<AclBinding> & Pick<AclBinding, 'resourceType' | 'resourceName' | 'operation'>): AclBinding => ({
  patternType: 'LITERAL',
  principal: 'User:alice',
  host: '*',
  permission: 'ALLOW',
  ...a,
});

const index = (acls: AclBinding[], settings: { superUsers?: string[]; allowEveryoneIfNoAclFound?: boolean } = {}) =>
  new AclIndex(acls, {
    superUsers: new Set(settings.superUsers ?? []),
    allowEveryoneIfNoAclFound: settings.allowEveryoneIfNoAclFound ?? false,
  });

const ask = (
  i: AclIndex,
  principal: string,
  operation: AclBinding['operation'],
  resourceType: AclBinding['resourceType'],
  resourceName: string,
  host = '10.0.0.1',
) => i.authorize({ principal, host, operation, resourceType, resourceName });

describe('the ACL decision', () => {
  it('denies what no ACL allows, allows what one does, for the named principal only', () => {
    const i = index([acl({ resourceType: 'TOPIC', resourceName: 'orders', operation: 'READ' })]);
    expect(ask(i, 'User:alice', 'READ', 'TOPIC', 'orders')).toBe(true);
    expect(ask(i, 'User:alice', 'WRITE', 'TOPIC', 'orders')).toBe(false);
    expect(ask(i, 'User:bob', 'READ', 'TOPIC', 'orders')).toBe(false);
    expect(ask(i, 'User:alice', 'READ', 'TOPIC', 'orders2')).toBe(false);
    expect(ask(i, 'User:alice', 'READ', 'GROUP', 'orders')).toBe(false);
  });

  it('DENY wins over ALLOW, whichever pattern each has', () => {
    const i = index([
      acl({
        resourceType: 'TOPIC',
        resourceName: 'pay',
        patternType: 'PREFIXED',
        operation: 'ALL',
        principal: 'User:*',
      }),
      acl({ resourceType: 'TOPIC', resourceName: 'payments', operation: 'READ', permission: 'DENY' }),
    ]);
    expect(ask(i, 'User:alice', 'READ', 'TOPIC', 'payments')).toBe(false);
    expect(ask(i, 'User:alice', 'WRITE', 'TOPIC', 'payments')).toBe(true);
    expect(ask(i, 'User:alice', 'READ', 'TOPIC', 'payouts')).toBe(true);
    expect(ask(i, 'User:bob', 'READ', 'TOPIC', 'payments')).toBe(true);
    // A DENY of ALL denies every operation.
    const all = index([
      acl({ resourceType: 'GROUP', resourceName: '*', operation: 'ALL' }),
      acl({ resourceType: 'GROUP', resourceName: 'g', operation: 'ALL', permission: 'DENY' }),
    ]);
    expect(ask(all, 'User:alice', 'DESCRIBE', 'GROUP', 'g')).toBe(false);
    expect(ask(all, 'User:alice', 'DESCRIBE', 'GROUP', 'h')).toBe(true);
  });

  it('PREFIXED patterns match names that start with them; LITERAL * matches every name of its type', () => {
    const i = index([
      acl({ resourceType: 'TOPIC', resourceName: 'team-a.', patternType: 'PREFIXED', operation: 'WRITE' }),
      acl({ resourceType: 'GROUP', resourceName: '*', operation: 'READ' }),
    ]);
    expect(ask(i, 'User:alice', 'WRITE', 'TOPIC', 'team-a.orders')).toBe(true);
    expect(ask(i, 'User:alice', 'WRITE', 'TOPIC', 'team-a.')).toBe(true);
    expect(ask(i, 'User:alice', 'WRITE', 'TOPIC', 'team-b.orders')).toBe(false);
    expect(ask(i, 'User:alice', 'WRITE', 'TOPIC', 'team-a')).toBe(false);
    expect(ask(i, 'User:alice', 'READ', 'GROUP', 'anything')).toBe(true);
  });

  it("Kafka's implied operations: READ, WRITE, DELETE, ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; not the other way", () => {
    for (const op of ['READ', 'WRITE', 'DELETE', 'ALTER'] as const) {
      expect(
        ask(
          index([acl({ resourceType: 'TOPIC', resourceName: 't', operation: op })]),
          'User:alice',
          'DESCRIBE',
          'TOPIC',
          't',
        ),
      ).toBe(true);
    }
    expect(
      ask(
        index([acl({ resourceType: 'TOPIC', resourceName: 't', operation: 'CREATE' })]),
        'User:alice',
        'DESCRIBE',
        'TOPIC',
        't',
      ),
    ).toBe(false);
    const configs = index([acl({ resourceType: 'TOPIC', resourceName: 't', operation: 'ALTER_CONFIGS' })]);
    expect(ask(configs, 'User:alice', 'DESCRIBE_CONFIGS', 'TOPIC', 't')).toBe(true);
    expect(ask(configs, 'User:alice', 'DESCRIBE', 'TOPIC', 't')).toBe(false);
    expect(
      ask(
        index([acl({ resourceType: 'TOPIC', resourceName: 't', operation: 'DESCRIBE' })]),
        'User:alice',
        'READ',
        'TOPIC',
        't',
      ),
    ).toBe(false);
    // A DENY of READ does not take DESCRIBE away from an ALLOW of DESCRIBE.
    const mixed = index([
      acl({ resourceType: 'TOPIC', resourceName: 't', operation: 'DESCRIBE' }),
      acl({ resourceType: 'TOPIC', resourceName: 't', operation: 'READ', permission: 'DENY' }),
    ]);
    expect(ask(mixed, 'User:alice', 'DESCRIBE', 'TOPIC', 't')).toBe(true);
    expect(
      ask(
        index([acl({ resourceType: 'CLUSTER', resourceName: 'kafka-cluster', operation: 'ALL' })]),
        'User:alice',
        'IDEMPOTENT_WRITE',
        'CLUSTER',
        'kafka-cluster',
      ),
    ).toBe(true);
  });

  it('super users may do anything, even against a DENY', () => {
    const i = index(
      [acl({ resourceType: 'TOPIC', resourceName: '*', operation: 'ALL', permission: 'DENY', principal: 'User:*' })],
      { superUsers: ['User:admin'] },
    );
    expect(ask(i, 'User:admin', 'DELETE', 'TOPIC', 't')).toBe(true);
    expect(ask(i, 'User:alice', 'DESCRIBE', 'TOPIC', 't')).toBe(false);
  });

  it('allow.everyone.if.no.acl.found allows a resource no ACL names, whoever asks, and only that', () => {
    const i = index(
      [acl({ resourceType: 'TOPIC', resourceName: 'private', operation: 'READ', principal: 'User:bob' })],
      { allowEveryoneIfNoAclFound: true },
    );
    expect(ask(i, 'User:alice', 'WRITE', 'TOPIC', 'open')).toBe(true);
    expect(ask(i, 'User:alice', 'READ', 'TOPIC', 'private')).toBe(false);
    expect(ask(index([]), 'User:alice', 'WRITE', 'TOPIC', 'open')).toBe(false);
  });

  it('an ACL naming a host applies to requests from that host only', () => {
    const i = index([acl({ resourceType: 'TOPIC', resourceName: 't', operation: 'READ', host: '10.0.0.1' })]);
    expect(ask(i, 'User:alice', 'READ', 'TOPIC', 't', '10.0.0.1')).toBe(true);
    expect(ask(i, 'User:alice', 'READ', 'TOPIC', 't', '10.0.0.2')).toBe(false);
  });

  it('authorizeAny (KIP-679): WRITE on some topic not covered by a DENY', () => {
    expect(
      index([acl({ resourceType: 'TOPIC', resourceName: 'a', operation: 'WRITE' })]).authorizeAny(
        'User:alice',
        'h',
        'WRITE',
        'TOPIC',
      ),
    ).toBe(true);
    expect(
      index([acl({ resourceType: 'TOPIC', resourceName: 'a', operation: 'READ' })]).authorizeAny(
        'User:alice',
        'h',
        'WRITE',
        'TOPIC',
      ),
    ).toBe(false);
    const covered = index([
      acl({ resourceType: 'TOPIC', resourceName: 'team.a', operation: 'WRITE' }),
      acl({
        resourceType: 'TOPIC',
        resourceName: 'team.',
        patternType: 'PREFIXED',
        operation: 'WRITE',
        permission: 'DENY',
      }),
    ]);
    expect(covered.authorizeAny('User:alice', 'h', 'WRITE', 'TOPIC')).toBe(false);
  });
});

describe('ACL validation and filters', () => {
  it('normalises case and host, rejects what Kafka rejects', () => {
    expect(
      validateBinding({
        resourceType: 'topic',
        resourceName: 't',
        principal: 'User:a',
        operation: 'read',
        permission: 'allow',
      }),
    ).toEqual({
      resourceType: 'TOPIC',
      resourceName: 't',
      patternType: 'LITERAL',
      principal: 'User:a',
      host: '*',
      operation: 'READ',
      permission: 'ALLOW',
    });
    const bad = {
      resourceType: 'TOPIC',
      resourceName: 't',
      principal: 'User:a',
      operation: 'READ',
      permission: 'ALLOW',
    };
    expect(() => validateBinding({ ...bad, operation: 'ANY' })).toThrow(/operation/);
    expect(() => validateBinding({ ...bad, principal: 'alice' })).toThrow(/Type:name/);
    expect(() => validateBinding({ ...bad, resourceType: 'CLUSTER' })).toThrow(/kafka-cluster/);
    expect(() => validateBinding({ ...bad, resourceName: '*', patternType: 'PREFIXED' })).toThrow(/PREFIXED/);
    expect(() => validateFilter({ resourceType: 'NOPE' } as never)).toThrow(/resource_type/);
  });

  it('a MATCH filter finds the literal, wildcard and prefixed ACLs that apply to a name', () => {
    const acls = [
      acl({ resourceType: 'TOPIC', resourceName: 'orders', operation: 'READ' }),
      acl({ resourceType: 'TOPIC', resourceName: '*', operation: 'READ' }),
      acl({ resourceType: 'TOPIC', resourceName: 'ord', patternType: 'PREFIXED', operation: 'READ' }),
      acl({ resourceType: 'TOPIC', resourceName: 'other', operation: 'READ' }),
    ];
    expect(
      acls
        .filter((a) => filterMatches({ resourceType: 'TOPIC', resourceName: 'orders', patternType: 'MATCH' }, a))
        .map((a) => a.resourceName),
    ).toEqual(['orders', '*', 'ord']);
    expect(acls.filter((a) => filterMatches({ resourceName: 'ord', patternType: 'ANY' }, a))).toHaveLength(1);
  });
});

describe('principals from the API Gateway request context', () => {
  it('IAM callers by ARN, an assumed role by its role; JWT by the claim; API keys by id', () => {
    expect(iamPrincipalName('arn:aws:sts::111122223333:assumed-role/Reader/i-0abc')).toBe(
      'arn:aws:iam::111122223333:role/Reader',
    );
    expect(iamPrincipalName('arn:aws:iam::111122223333:user/alice')).toBe('arn:aws:iam::111122223333:user/alice');
    expect(gatewayPrincipal({ authorizer: { iam: { userArn: 'arn:aws:iam::111122223333:user/alice' } } }, 'sub')).toBe(
      'User:arn:aws:iam::111122223333:user/alice',
    );
    expect(gatewayPrincipal({ authorizer: { jwt: { claims: { sub: 's-1', email: 'a@x' } } } }, 'email')).toBe(
      'User:a@x',
    );
    expect(() => gatewayPrincipal({ authorizer: { jwt: { claims: { sub: 's-1' } } } }, 'email')).toThrow(/email claim/);
    expect(gatewayPrincipal({ authorizer: { lambda: { apiKeyId: 'ci' } } }, 'sub')).toBe('User:ci');
    expect(gatewayPrincipal({}, 'sub')).toBeUndefined();
    // A REST API (v1) with IAM auth puts the caller in identity.
    expect(gatewayPrincipal({ identity: { userArn: 'arn:aws:sts::111122223333:assumed-role/W/s' } }, 'sub')).toBe(
      'User:arn:aws:iam::111122223333:role/W',
    );
    expect(gatewayPrincipal({ authorizer: null, identity: { userArn: null } }, 'sub')).toBeUndefined();
  });
});

describe('a role with a path (IAM Identity Center) and the ARN of its sessions', () => {
  const SSO_ROLE = 'arn:aws:iam::111122223333:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_Admin_0123';
  // STS drops the path: this is the principal every request of the role's sessions carries.
  const session = `User:${iamPrincipalName('arn:aws:sts::111122223333:assumed-role/AWSReservedSSO_Admin_0123/alice@example.com')}`;

  it('a super user named with the role path is its sessions; another account or role is not', () => {
    const i = index([], { superUsers: [`User:${SSO_ROLE}`] });
    expect(ask(i, session, 'ALTER', 'CLUSTER', 'kafka-cluster')).toBe(true);
    expect(i.authorizeAny(session, '10.0.0.1', 'WRITE', 'TOPIC')).toBe(true);
    expect(
      ask(i, 'User:arn:aws:iam::444455556666:role/AWSReservedSSO_Admin_0123', 'ALTER', 'CLUSTER', 'kafka-cluster'),
    ).toBe(false);
    expect(
      ask(i, 'User:arn:aws:iam::111122223333:role/AWSReservedSSO_Other', 'ALTER', 'CLUSTER', 'kafka-cluster'),
    ).toBe(false);
    // Only roles lose their path: an IAM user's path is part of what it is compared by.
    const users = index([], { superUsers: ['User:arn:aws:iam::111122223333:user/ops/alice'] });
    expect(ask(users, 'User:arn:aws:iam::111122223333:user/alice', 'ALTER', 'CLUSTER', 'kafka-cluster')).toBe(false);
  });

  it('an ACL naming the role with or without its path applies to its sessions, and a filter finds both', () => {
    const withPath = acl({
      resourceType: 'TOPIC',
      resourceName: 'orders',
      operation: 'READ',
      principal: `User:${SSO_ROLE}`,
    });
    const withoutPath = acl({ resourceType: 'TOPIC', resourceName: 'audit', operation: 'WRITE', principal: session });
    const i = index([withPath, withoutPath]);
    expect(ask(i, session, 'READ', 'TOPIC', 'orders')).toBe(true);
    expect(ask(i, session, 'WRITE', 'TOPIC', 'audit')).toBe(true);
    expect(ask(i, session, 'WRITE', 'TOPIC', 'orders')).toBe(false);
    const deny = index([withPath, { ...withPath, permission: 'DENY', principal: session }]);
    expect(ask(deny, session, 'READ', 'TOPIC', 'orders')).toBe(false);
    expect([withPath, withoutPath].filter((a) => filterMatches({ principal: session }, a))).toHaveLength(2);
    expect([withPath, withoutPath].filter((a) => filterMatches({ principal: `User:${SSO_ROLE}` }, a))).toHaveLength(2);
  });
});

describe('client quota resolution', () => {
  it("takes the most specific entity per key, in Kafka's order, with per-caller buckets at default levels", () => {
    const q = new QuotaIndex([
      { entity: { user: 'alice' }, values: { producer_byte_rate: 100 } },
      { entity: { user: null }, values: { producer_byte_rate: 10, consumer_byte_rate: 20 } },
      { entity: { user: 'alice', 'client-id': 'etl' }, values: { producer_byte_rate: 1000 } },
      { entity: { 'client-id': null }, values: { request_percentage: 50 } },
    ]);
    expect(q.resolve('alice', 'etl').producer_byte_rate?.rate).toBe(1000);
    expect(q.resolve('alice', 'web').producer_byte_rate?.rate).toBe(100);
    expect(q.resolve('alice', 'web').consumer_byte_rate?.rate).toBe(20);
    expect(q.resolve('bob', 'web').producer_byte_rate?.rate).toBe(10);
    expect(q.resolve('bob', 'web').request_percentage?.rate).toBe(50);
    // The default user quota is each user's own, not shared.
    expect(q.resolve('bob', 'x').producer_byte_rate!.bucket).not.toBe(
      q.resolve('carol', 'x').producer_byte_rate!.bucket,
    );
    expect(new QuotaIndex([]).resolve('alice', '')).toEqual({});
  });
});

describe('quota buckets', () => {
  it('serve while in credit, refuse while in debt for as long as the rate needs to pay it back', () => {
    let now = 0;
    const buckets = new QuotaBuckets({ now: () => now });
    const q = { rate: 1000, bucket: 'producer_byte_rate\u0000user=alice' };
    buckets.check('producer_byte_rate', q);
    buckets.record(q, 2500); // one request may take the bucket into debt: 1000 - 2500
    const thrown = (() => {
      try {
        buckets.check('producer_byte_rate', q);
      } catch (e) {
        return e as ThrottledError;
      }
    })();
    expect(thrown).toBeInstanceOf(ThrottledError);
    expect(thrown).toMatchObject({ errorName: 'THROTTLING_QUOTA_EXCEEDED', throttleTimeMs: 1500 });
    now = 1499;
    expect(() => buckets.check('producer_byte_rate', q)).toThrow(ThrottledError);
    now = 1500;
    expect(() => buckets.check('producer_byte_rate', q)).not.toThrow();
    // Idle time refills at most one second of the rate.
    now = 100_000;
    buckets.record(q, 1500);
    expect(() => buckets.check('producer_byte_rate', q)).toThrow(ThrottledError);
    expect(() =>
      buckets.check('producer_byte_rate', { ...q, bucket: 'producer_byte_rate\u0000user=bob' }),
    ).not.toThrow();
  });
});
