/**
 * Kafka's AlterUserScramCredentials and DescribeUserScramCredentials over the credential store,
 * with the controller's rules (ScramControlManager): every entry is checked before any is
 * written; a user named twice in one request is DUPLICATE_RESOURCE; an unknown mechanism
 * UNSUPPORTED_SASL_MECHANISM; iterations outside 4096..16384 or an empty user
 * UNACCEPTABLE_CREDENTIAL; deleting a credential that does not exist RESOURCE_NOT_FOUND. The
 * Kafka listener and the HTTP route both answer from here.
 */
import { KafkaError } from '../wire/errors.js';
import { credentialFromSaltedPassword, isScramMechanism, validateCredential, type ScramMechanism } from './scram.js';
import type { ScramCredentialStore } from './scram-store.js';

export interface ScramDeletion {
  user: string;
  /** A name Kafka does not know (its UNKNOWN type) is refused per user. */
  mechanism: string;
}

export interface ScramUpsertion extends ScramDeletion {
  iterations: number;
  salt: Uint8Array;
  /** Hi(password, salt, iterations): the admin client derives it, so the password never travels. */
  saltedPassword: Uint8Array;
}

/** One user's outcome; `error` undefined when it applied. */
export interface ScramAlterResult {
  user: string;
  error?: KafkaError;
}

export async function alterScramCredentials(
  store: ScramCredentialStore,
  deletions: readonly ScramDeletion[],
  upsertions: readonly ScramUpsertion[],
): Promise<ScramAlterResult[]> {
  const errors = new Map<string, KafkaError>();
  const seen = new Set<string>();
  const twice = () =>
    new KafkaError('DUPLICATE_RESOURCE', 'A user credential cannot be altered twice in the same request');
  const mechanismOf = (d: ScramDeletion): ScramMechanism => {
    if (d.user === '') throw new KafkaError('UNACCEPTABLE_CREDENTIAL', 'Username must not be empty');
    if (!isScramMechanism(d.mechanism)) throw new KafkaError('UNSUPPORTED_SASL_MECHANISM', 'Unknown SCRAM mechanism');
    return d.mechanism;
  };
  const check = async (d: ScramDeletion, validate: (m: ScramMechanism) => Promise<void> | void) => {
    if (errors.has(d.user)) return;
    if (seen.has(d.user)) {
      seen.delete(d.user);
      errors.set(d.user, twice());
      return;
    }
    try {
      await validate(mechanismOf(d));
      seen.add(d.user);
    } catch (e) {
      if (!(e instanceof KafkaError)) throw e;
      errors.set(d.user, e);
    }
  };
  for (const d of deletions)
    await check(d, async (m) => {
      if (!(await store.get(d.user, m)))
        throw new KafkaError('RESOURCE_NOT_FOUND', 'Attempt to delete a user credential that does not exist');
    });
  for (const u of upsertions) await check(u, (m) => validateCredential(u.user, m, u.iterations));

  const results: ScramAlterResult[] = [];
  for (const d of deletions)
    if (seen.has(d.user)) {
      await store.delete(d.user, d.mechanism as ScramMechanism);
      results.push({ user: d.user });
    }
  for (const u of upsertions)
    if (seen.has(u.user)) {
      const m = u.mechanism as ScramMechanism;
      await store.put(u.user, credentialFromSaltedPassword(m, u.saltedPassword, u.salt, u.iterations));
      results.push({ user: u.user });
    }
  for (const [user, error] of errors) results.push({ user, error });
  return results;
}

export interface ScramDescription {
  user: string;
  error?: KafkaError;
  credentials: { mechanism: ScramMechanism; iterations: number }[];
}

/** Every user with a credential (`users` null or empty), else each named one: RESOURCE_NOT_FOUND for a user without any. */
export async function describeScramCredentials(
  store: ScramCredentialStore,
  users: readonly string[] | null,
): Promise<ScramDescription[]> {
  const byUser = new Map<string, ScramDescription['credentials']>();
  for (const c of await store.list()) {
    const list = byUser.get(c.user) ?? [];
    list.push({ mechanism: c.mechanism, iterations: c.iterations });
    byUser.set(c.user, list);
  }
  if (!users || users.length === 0) return [...byUser].map(([user, credentials]) => ({ user, credentials }));
  const counts = new Map<string, number>();
  for (const u of users) counts.set(u, (counts.get(u) ?? 0) + 1);
  return [...counts].map(([user, n]) => {
    if (n > 1)
      return {
        user,
        credentials: [],
        error: new KafkaError(
          'DUPLICATE_RESOURCE',
          `Cannot describe SCRAM credentials for the same user twice in a single request: ${user}`,
        ),
      };
    const credentials = byUser.get(user);
    if (!credentials)
      return {
        user,
        credentials: [],
        error: new KafkaError('RESOURCE_NOT_FOUND', `Attempt to describe nonexistent user: ${user}`),
      };
    return { user, credentials };
  });
}
