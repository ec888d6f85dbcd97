/**
 * In-process S3 and DynamoDB emulators for tests: s3rver and dynalite on 127.0.0.1, each on a
 * port the OS picks. Start one per test file (in `beforeAll`) and `stop()` it in `afterAll`;
 * both start in well under a second and leave nothing behind.
 *
 *   const s3 = await startS3rver();          // s3.client is ready to use on s3.bucket
 *   const store = new S3ObjectStore({ bucket: s3.bucket, client: s3.client });
 *   ...
 *   await s3.stop();
 *
 * Credentials and region are fixed here (never read from the environment); build extra clients
 * with `createS3Client(s3ClientOptions(endpoint))` / `createDynamoDbClient(dynamoDbClientOptions(endpoint))`.
 */
import crypto from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import dynalite from 'dynalite';
import S3rver from 's3rver';
import {
  createDynamoDbClient,
  ensureTable,
  type CreateDynamoDbClientOptions,
} from '../../src/storage/dynamodb-metadata-store.js';
import { compareKeys } from '../../src/storage/key-order.js';
import { createS3Client, type CreateS3ClientOptions } from '../../src/storage/s3-object-store.js';
import type { SdkTimeouts } from '../../src/storage/sdk-timeouts.js';

export const TEST_REGION = 'us-east-1';

/** s3rver checks signatures against this fixed key pair; dynalite accepts any. */
export const TEST_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

export interface S3rverHandle {
  /** `http://127.0.0.1:<port>`; needs path-style addressing. */
  endpoint: string;
  /** A bucket that exists and starts empty. */
  bucket: string;
  /** A client for `endpoint`, destroyed by `stop()`. */
  client: S3Client;
  /** Closes the client and the server and removes the server's directory. */
  stop(): Promise<void>;
}

export interface DynaliteHandle {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  /** A table with the metadata key schema (pk S, sk S) that exists, is ACTIVE and starts empty. */
  table: string;
  /** A client for `endpoint`, destroyed by `stop()`. */
  client: DynamoDBClient;
  /** Closes the client and the server (its data lives in memory only). */
  stop(): Promise<void>;
}

/**
 * The environment a server process (`src/server.ts`) needs to run on these emulators: the aws
 * backend, the table and buckets (in replica order), this region and these credentials.
 */
export function awsServerEnv(o: {
  table: string;
  buckets: string[];
  dynamoDbEndpoint: string;
  s3Endpoint: string;
}): Record<string, string> {
  return {
    STORAGE_BACKEND: 'aws',
    BUCKETS: o.buckets.join(','),
    TABLE_NAME: o.table,
    AWS_REGION: TEST_REGION,
    AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: o.dynamoDbEndpoint,
    AWS_ENDPOINT_URL_S3: o.s3Endpoint,
  };
}

/**
 * The emulators run in the test's own process: a connection or an answer waits for the test's event
 * loop, which a busy suite on a loaded machine holds for seconds. Their clients wait that long; the
 * functions' own timeouts (src/storage/sdk-timeouts.ts) are tested with a stalling proxy
 * (test/storage/sdk-timeouts.test.ts).
 */
const IN_PROCESS_TIMEOUTS: SdkTimeouts = {
  connectionTimeoutMs: 60_000,
  requestTimeoutMs: 120_000,
  socketTimeoutMs: 120_000,
  maxAttempts: 3,
};

/**
 * An emulator never closes a keep-alive connection for being idle (Node's server does after 5 s).
 * In the test's own process, its close and the client's next request race: a loop busy for a while
 * (a read of thousands of objects on a loaded machine) hands a request to a pooled socket whose close
 * it has not yet seen, the server resets it (ECONNRESET), and a burst of those spends the SDK's retry
 * quota (10 of its 500 tokens each), so the next reset is not retried. The clients close their
 * sockets themselves (`stop()`).
 */
function keepIdleConnections(server: Server): void {
  server.keepAliveTimeout = 0;
}

export function s3ClientOptions(endpoint: string): CreateS3ClientOptions {
  return {
    endpoint,
    region: TEST_REGION,
    forcePathStyle: true,
    credentials: { ...TEST_CREDENTIALS },
    timeouts: IN_PROCESS_TIMEOUTS,
  };
}

export function dynamoDbClientOptions(endpoint: string): CreateDynamoDbClientOptions {
  return { endpoint, region: TEST_REGION, credentials: { ...TEST_CREDENTIALS }, timeouts: IN_PROCESS_TIMEOUTS };
}

export interface StartS3rverOptions {
  /**
   * Patch s3rver's known deviations from S3 (see `patchS3rverDeviations`); on by default. Off only
   * to check that the deviations still exist, so the patches go once s3rver no longer needs them.
   */
  patchDeviations?: boolean;
  /** Buckets to create (default one, `test-bucket`); `bucket` is the first. */
  buckets?: string[];
}

export async function startS3rver(options: StartS3rverOptions = {}): Promise<S3rverHandle> {
  allowSingleDes();
  const directory = await mkdtemp(join(tmpdir(), 's3rver-'));
  const buckets = options.buckets ?? ['test-bucket'];
  const bucket = buckets[0]!;
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  if (options.patchDeviations ?? true) patchS3rverDeviations((server as unknown as { store: S3rverStore }).store);
  let address: AddressInfo;
  try {
    address = await server.run();
  } catch (err) {
    await rm(directory, { recursive: true, force: true });
    throw err;
  }
  keepIdleConnections((server as unknown as { httpServer: Server }).httpServer);
  const endpoint = `http://127.0.0.1:${address.port}`;
  const client = createS3Client(s3ClientOptions(endpoint));
  return {
    endpoint,
    bucket,
    client,
    async stop() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** The part of s3rver's FilesystemStore (lib/stores/filesystem.js) the patches below replace. */
interface S3rverStore {
  listObjects(
    bucket: string,
    options: S3rverListOptions,
  ): Promise<{ objects: { key: string }[]; commonPrefixes: string[]; isTruncated: boolean }>;
  getObject(bucket: string, key: string, options?: { start?: number; end?: number }): Promise<S3rverObject | null>;
}

interface S3rverListOptions {
  delimiter?: string;
  startAfter?: string;
  prefix?: string;
  maxKeys?: number;
}

interface S3rverObject {
  readonly size: number;
  range?: { start: number; end: number };
  content: { destroy(): void } | null;
}

/**
 * s3rver 3.7.1 deviates from S3 in two ways the ObjectStore contract checks; both are fixed here
 * in its storage layer, under its HTTP layer, so requests and responses still go through s3rver's
 * own parsing, XML, continuation tokens and error mapping, and the S3 adapter sees what S3 sends.
 *
 *  - Listing order. s3rver stores a key's '/'-separated segments as directories and lists by
 *    walking them, so `a/b` comes before `a` and `a-b` (a directory's children are listed where
 *    its bare name sorts), and it compares `start-after` in UTF-16 order. S3 lists every key in
 *    UTF-8 byte order: `a` < `a-b` < `a/b`, and U+FFFD before U+1F600. The patch lets s3rver
 *    collect the keys under the prefix, then sorts, skips past `start-after` and cuts `max-keys`
 *    in S3's order (`compareKeys`), keeping s3rver's own delimiter handling.
 *  - Ranged GET of an empty object. s3rver clamps the last byte to `max(0, size - 1)`, so
 *    `Range: bytes=0-9` on a zero-byte object is "satisfiable": it announces Content-Length 1 and
 *    sends nothing, and the client aborts on the short body. S3 answers 416 InvalidRange (every
 *    range of an empty representation is unsatisfiable, RFC 9110 14.1.1). The patch returns the
 *    object without content, which s3rver's controller already answers with 416 InvalidRange.
 *
 * test/storage/s3-object-store.test.ts checks that unpatched s3rver still shows both deviations.
 */
function patchS3rverDeviations(store: S3rverStore): void {
  const listObjects = store.listObjects.bind(store);
  store.listObjects = async (bucket, { delimiter = '', startAfter = '', prefix = '', maxKeys = Infinity }) => {
    const all = await listObjects(bucket, { prefix });
    const objects: (typeof all.objects)[number][] = [];
    const commonPrefixes = new Set<string>();
    let isTruncated = false;
    for (const object of all.objects.sort((a, b) => compareKeys(a.key, b.key))) {
      if (compareKeys(object.key, startAfter) <= 0) continue;
      const cut = delimiter ? object.key.indexOf(delimiter, prefix.length) : -1;
      if (cut !== -1) {
        commonPrefixes.add(object.key.slice(0, cut + delimiter.length));
        continue;
      }
      if (objects.length >= maxKeys) {
        isTruncated = true;
        break;
      }
      objects.push(object);
    }
    return { objects, commonPrefixes: [...commonPrefixes].sort(compareKeys), isTruncated };
  };

  const getObject = store.getObject.bind(store);
  store.getObject = async (bucket, key, options) => {
    const object = await getObject(bucket, key, options);
    if (object?.range && object.size === 0 && object.content) {
      object.content.destroy();
      object.content = null;
    }
    return object;
  };
}

/**
 * s3rver 3.7 encrypts ListObjectsV2 continuation tokens with single DES ('des'), which OpenSSL 3
 * (Node >= 17) only ships in its legacy provider, so every truncated listing fails with
 * InternalError. Triple DES with three equal keys is single DES, and 'des-ede3-cbc' is in the
 * default provider: route 'des' there. Affects only callers asking for 'des' in this process.
 */
function allowSingleDes(): void {
  try {
    crypto.createCipheriv('des', Buffer.alloc(8), Buffer.alloc(8));
    return; // the legacy provider is loaded (or this is already patched)
  } catch {
    // fall through
  }
  const asTripleDes = (algorithm: string, key: crypto.CipherKey): [string, crypto.CipherKey] =>
    algorithm.toLowerCase() === 'des' && Buffer.isBuffer(key) && key.length === 8
      ? ['des-ede3-cbc', Buffer.concat([key, key, key])]
      : [algorithm, key];
  const { createCipheriv, createDecipheriv } = crypto;
  const patched = crypto as { createCipheriv: unknown; createDecipheriv: unknown };
  patched.createCipheriv = (algorithm: string, key: crypto.CipherKey, iv: crypto.BinaryLike | null, options?: never) =>
    createCipheriv(...asTripleDes(algorithm, key), iv, options);
  patched.createDecipheriv = (
    algorithm: string,
    key: crypto.CipherKey,
    iv: crypto.BinaryLike | null,
    options?: never,
  ) => createDecipheriv(...asTripleDes(algorithm, key), iv, options);
}

export async function startDynalite(): Promise<DynaliteHandle> {
  const server: Server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  keepIdleConnections(server);
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = createDynamoDbClient(dynamoDbClientOptions(endpoint));
  const stop = async () => {
    client.destroy();
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
  };
  const table = 'test-metadata';
  try {
    await ensureTable(client, table);
  } catch (err) {
    await stop();
    throw err;
  }
  return { endpoint, table, client, stop };
}
