/**
 * SCRAM credentials in the metadata store, as Kafka's controller keeps them (salt, iterations,
 * StoredKey, ServerKey: never the password): one item per user and mechanism under pk `scram`,
 * so describing every user is one query and authenticating one read. Nothing is cached: a
 * changed or deleted credential applies to the next authentication in every process.
 */
import { SCRAM_PK, scramSk } from '../storage/key-layout.js';
import type { MetadataStore } from '../storage/ports.js';
import { isScramMechanism, type ScramCredential, type ScramMechanism } from './scram.js';

interface StoredCredential {
  user: string;
  mechanism: ScramMechanism;
  iterations: number;
  /** base64 */
  salt: string;
  storedKey: string;
  serverKey: string;
}

const fromStored = (v: StoredCredential): ScramCredential => ({
  mechanism: v.mechanism,
  iterations: v.iterations,
  salt: Buffer.from(v.salt, 'base64'),
  storedKey: Buffer.from(v.storedKey, 'base64'),
  serverKey: Buffer.from(v.serverKey, 'base64'),
});

export class ScramCredentialStore {
  constructor(private readonly metadata: MetadataStore) {}

  async get(user: string, mechanism: ScramMechanism): Promise<ScramCredential | undefined> {
    const item = await this.metadata.get<StoredCredential>(SCRAM_PK, scramSk(user, mechanism));
    return item ? fromStored(item.value) : undefined;
  }

  /** Every user's mechanisms and iterations (what DescribeUserScramCredentials shows). */
  async list(): Promise<{ user: string; mechanism: ScramMechanism; iterations: number }[]> {
    return (await this.metadata.query<StoredCredential>(SCRAM_PK))
      .map((i) => i.value)
      .filter((v) => isScramMechanism(v.mechanism))
      .map(({ user, mechanism, iterations }) => ({ user, mechanism, iterations }));
  }

  /** Unconditional: the same upsertion written twice (a retry) leaves the same credential. */
  async put(user: string, c: ScramCredential): Promise<void> {
    const value: StoredCredential = {
      user,
      mechanism: c.mechanism,
      iterations: c.iterations,
      salt: c.salt.toString('base64'),
      storedKey: c.storedKey.toString('base64'),
      serverKey: c.serverKey.toString('base64'),
    };
    await this.metadata.put(SCRAM_PK, scramSk(user, c.mechanism), value);
  }

  async delete(user: string, mechanism: ScramMechanism): Promise<void> {
    await this.metadata.delete(SCRAM_PK, scramSk(user, mechanism));
  }
}
