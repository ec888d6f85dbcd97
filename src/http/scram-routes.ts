import { Hono } from 'hono';
import * as z from 'zod';
import { alterScramCredentials, describeScramCredentials } from '../authz/scram-admin.js';
import type { KafkaError } from '../wire/errors.js';
import type { AppEnv } from './app-env.js';
import { toErrorResponse } from './error-mapping.js';
import { readJson } from './request.js';
import { authorize } from './security.js';

const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64');
const deletion = z.object({ user: z.string(), mechanism: z.string() });
const alterSchema = z.object({
  deletions: z.array(deletion).default([]),
  upsertions: z
    .array(
      deletion.extend({
        iterations: z.number().int(),
        salt: base64.min(1),
        salted_password: base64.min(1),
      }),
    )
    .default([]),
});

/** A per-user error as the v3 envelope writes one. */
const errorOf = (e: KafkaError | undefined) => (e ? { error: toErrorResponse(e).body } : {});

/**
 * Extension (v3 has no SCRAM admin): Kafka's DescribeUserScramCredentials (DESCRIBE on the
 * cluster) and AlterUserScramCredentials (ALTER on the cluster), per user as Kafka answers them.
 * An upsertion carries the salt and salted password, never the password (the client derives them,
 * as Kafka's admin client does); the server keeps only StoredKey and ServerKey.
 */
export function scramRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.get('/user-scram-credentials', async (c) => {
    await authorize(c, 'DESCRIBE', 'CLUSTER');
    const users = c.req.queries('user') ?? null;
    const described = await describeScramCredentials(c.get('services').security.scram, users);
    const r = c.get('resources');
    return c.json(
      r.list(
        'KafkaUserScramCredentialList',
        `${r.base}/user-scram-credentials${new URL(c.req.url).search}`,
        described.map((d) => ({ user: d.user, credentials: d.credentials, ...errorOf(d.error) })),
      ),
    );
  });

  app.post('/user-scram-credentials:alter', async (c) => {
    await authorize(c, 'ALTER', 'CLUSTER');
    const body = alterSchema.parse(await readJson(c));
    const results = await alterScramCredentials(
      c.get('services').security.scram,
      body.deletions,
      body.upsertions.map((u) => ({
        user: u.user,
        mechanism: u.mechanism,
        iterations: u.iterations,
        salt: Buffer.from(u.salt, 'base64'),
        saltedPassword: Buffer.from(u.salted_password, 'base64'),
      })),
    );
    for (const r of results)
      if (!r.error)
        c.get('audit')('scram credential altered', {
          audit: 'scram-credential-altered',
          principal: c.get('principal'),
          user: r.user,
        });
    return c.json({ data: results.map((r) => ({ user: r.user, ...errorOf(r.error) })) });
  });

  return app;
}
