/**
 * DescribeUserScramCredentials (DESCRIBE on the cluster) and AlterUserScramCredentials (ALTER on
 * the cluster), answered from the same rules as the HTTP route (src/authz/scram-admin.ts).
 */
import { alterScramCredentials, describeScramCredentials } from '../../authz/scram-admin.js';
import { mechanismOfType, mechanismType } from '../../authz/scram.js';
import { allowed, denied } from './access.js';
import type { Handler } from './context.js';

/** A mechanism type Kafka does not know stays unknown (the admin answers UNSUPPORTED_SASL_MECHANISM). */
const mechanismName = (type: number) => mechanismOfType(type) ?? `UNKNOWN(${type})`;

export const describeUserScramCredentials: Handler = async (ctx, req) => {
  if (!(await allowed(ctx, 'DESCRIBE', 'CLUSTER'))) {
    const e = denied(ctx, 'DESCRIBE', 'CLUSTER');
    return { throttleTimeMs: 0, errorCode: e.code, errorMessage: e.message, results: [] };
  }
  const users = (req.users as { name: string }[] | null)?.map((u) => u.name) ?? null;
  const described = await describeScramCredentials(ctx.services.security.scram, users);
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    errorMessage: null,
    results: described.map((d) => ({
      user: d.user,
      errorCode: d.error?.code ?? 0,
      errorMessage: d.error?.message ?? null,
      credentialInfos: d.credentials.map((c) => ({ mechanism: mechanismType(c.mechanism), iterations: c.iterations })),
    })),
  };
};

export const alterUserScramCredentials: Handler = async (ctx, req) => {
  const deletions = (req.deletions as { name: string; mechanism: number }[]).map((d) => ({
    user: d.name,
    mechanism: mechanismName(d.mechanism),
  }));
  const upsertions = (
    req.upsertions as {
      name: string;
      mechanism: number;
      iterations: number;
      salt: Uint8Array;
      saltedPassword: Uint8Array;
    }[]
  ).map((u) => ({ ...u, user: u.name, mechanism: mechanismName(u.mechanism) }));
  if (!(await allowed(ctx, 'ALTER', 'CLUSTER'))) {
    const e = denied(ctx, 'ALTER', 'CLUSTER');
    const users = new Set([...deletions, ...upsertions].map((d) => d.user));
    return {
      throttleTimeMs: 0,
      results: [...users].map((user) => ({ user, errorCode: e.code, errorMessage: e.message })),
    };
  }
  const results = await alterScramCredentials(ctx.services.security.scram, deletions, upsertions);
  for (const r of results)
    if (!r.error)
      ctx.logger.info('scram credential altered', {
        audit: 'scram-credential-altered',
        principal: ctx.connection.principal,
        user: r.user,
      });
  return {
    throttleTimeMs: 0,
    results: results.map((r) => ({
      user: r.user,
      errorCode: r.error?.code ?? 0,
      errorMessage: r.error?.message ?? null,
    })),
  };
};
