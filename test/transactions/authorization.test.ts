/** The transaction routes under ACLs: Kafka's operations on TRANSACTIONAL_ID, GROUP and CLUSTER. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createServices, createStorage } from '../../src/compose.js';
import { serverConfigFromEnv } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';

const dir = mkdtempSync(join(tmpdir(), 'txn-authz-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const AUTH_FILE = join(dir, 'auth.json');
writeFileSync(
  AUTH_FILE,
  JSON.stringify({
    authorization: true,
    'super.users': 'User:admin',
    tokens: { 'admin-token': 'User:admin', 'alice-token': 'User:alice' },
  }),
);

function secureApp() {
  const config = serverConfigFromEnv({ STORAGE_BACKEND: 'memory', AUTH_CONFIG: AUTH_FILE });
  const app = createApp(createServices(config, createStorage(config.backend)), { logError: () => {}, audit: () => {} });
  return (token: string) => async (method: string, path: string, body?: unknown) => {
    const res = await app.request(`/v3/clusters/local/${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
}

describe('transactions under ACLs', () => {
  it('needs WRITE on the transactional id to init, produce and end; DESCRIBE to see it; CLUSTER_ACTION for markers', async () => {
    const as = secureApp();
    const admin = as('admin-token');
    const alice = as('alice-token');
    const allow = (resource_type: string, resource_name: string, operation: string) =>
      admin('POST', 'acls', {
        resource_type,
        resource_name,
        pattern_type: 'LITERAL',
        principal: 'User:alice',
        host: '*',
        operation,
        permission: 'ALLOW',
      });
    expect((await admin('POST', 'topics', { topic_name: 't', partitions_count: 1 })).status).toBe(201);
    const denied = await alice('POST', 'transactions/tx/init');
    expect(denied).toMatchObject({ status: 403, body: { error: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED' } });
    expect((await allow('TRANSACTIONAL_ID', 'tx', 'WRITE')).status).toBeLessThan(300);
    const init = await alice('POST', 'transactions/tx/init');
    expect(init.status).toBe(200);
    const p = { producer_id: init.body.producer_id, producer_epoch: init.body.producer_epoch };
    const produce = () =>
      alice('POST', 'topics/t/records:batch', {
        transactional_id: 'tx',
        ...p,
        sequences: [{ partition_id: 0, base_sequence: 0 }],
        entries: [{ id: '1', partition_id: 0, value: { type: 'STRING', data: 'v' } }],
      });
    expect((await produce()).body.error).toBe('TOPIC_AUTHORIZATION_FAILED');
    expect((await allow('TOPIC', 't', 'WRITE')).status).toBeLessThan(300);
    expect((await produce()).status).toBe(207);
    expect((await alice('POST', 'transactions/tx/offsets', { ...p, group_id: 'g', offsets: [] })).body.error).toBe(
      'GROUP_AUTHORIZATION_FAILED',
    );
    expect((await alice('POST', 'transactions/tx/commit', p)).status).toBe(200);
    // Listing shows only the ids she may DESCRIBE (WRITE implies it, as in Kafka); describing needs it too.
    expect((await admin('POST', 'transactions/other/init')).status).toBe(200);
    expect(
      (await alice('GET', 'transactions')).body.data.map((x: { transactional_id: string }) => x.transactional_id),
    ).toEqual(['tx']);
    expect((await alice('GET', 'transactions/other')).body.error).toBe('TRANSACTIONAL_ID_AUTHORIZATION_FAILED');
    expect((await alice('GET', 'transactions/tx')).status).toBe(200);
    expect((await alice('GET', 'transactions:hanging')).body.error).toBe('CLUSTER_AUTHORIZATION_FAILED');
    expect((await alice('POST', 'topics/t/partitions/0/transactions:abort', p)).body.error).toBe(
      'CLUSTER_AUTHORIZATION_FAILED',
    );
    expect((await admin('GET', 'transactions:hanging')).status).toBe(200);
  });
});
