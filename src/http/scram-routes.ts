import { Hono } from 'hono';
import * as z from 'zod';
import { alterScramCredentials, describeScramCredentials } from '../authz/scram-admin.js';
import type { KafkaError } from '../wire/errors.js';
import type { AppEnv } from './app-env.js';
import { toErrorResponse } from './error-mapping.js';
import { errorSchema, listMetadata } from './openapi-parts.js';
import { readJson } from './request.js';
import { SCRAM_MECHANISMS } from '../authz/scram.js';
import { authorize } from './security.js';

const base64 = z
  .string()
  .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64')
  .meta({ contentEncoding: 'base64' });
// The mechanism is checked by the SCRAM admin, per user (answered in that user's error).
const mechanism = z.string().meta({ enum: [...SCRAM_MECHANISMS] });
const deletion = z.object({ user: z.string(), mechanism });
export const alterSchema = z.object({
  deletions: z.array(deletion).default([]),
  upsertions: z
    .array(
      deletion.extend({
        iterations: z.int().meta({ minimum: 4096, maximum: 16384 }),
        salt: base64.min(1),
        salted_password: base64
          .min(1)
          .meta({ description: "Hi(password, salt, iterations): PBKDF2 with the mechanism's HMAC" }),
      }),
    )
    .default([]),
});
export const scramQuerySchema = z.object({
  user: z.array(z.string()).meta({ description: 'repeat for several; absent: every user' }).optional(),
});
/** A per-user failure: the error envelope of one user's entry. */
const userError = { error: errorSchema.optional() };
export const scramListSchema = z.object({
  kind: z.literal('KafkaUserScramCredentialList'),
  metadata: listMetadata,
  data: z.array(
    z.object({
      user: z.string(),
      credentials: z.array(z.object({ mechanism, iterations: z.int() })),
      ...userError,
    }),
  ),
});
export const alterResultSchema = z.object({ data: z.array(z.object({ user: z.string(), ...userError })) });

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
    const users = scramQuerySchema.parse({ user: c.req.queries('user') }).user ?? null;
    const described = await describeScramCredentials(c.get('services').security.scram, users);
    const r = c.get('resources');
    return c.json(
      r.list(
        'KafkaUserScramCredentialList',
        `${r.base}/user-scram-credentials${new URL(c.req.url).search}`,
        described.map((d) => ({ user: d.user, credentials: d.credentials, ...errorOf(d.error) })),
      ) satisfies z.input<typeof scramListSchema>,
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
    return c.json({
      data: results.map((r) => ({ user: r.user, ...errorOf(r.error) })),
    } satisfies z.input<typeof alterResultSchema>);
  });

  return app;
}
