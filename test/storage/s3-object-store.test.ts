import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectNotFoundError } from '../../src/storage/ports.js';
import { createS3Client, S3ObjectStore } from '../../src/storage/s3-object-store.js';
import { startS3rver, type S3rverHandle } from '../support/emulators.js';

/** A client that records each command's input and answers from a script. */
function stubClient(answer: (name: string, input: Record<string, unknown>) => unknown) {
  const sent: { name: string; input: Record<string, unknown> }[] = [];
  const client = {
    send: async (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      const name = command.constructor.name;
      sent.push({ name, input: command.input });
      const result = answer(name, command.input);
      if (result instanceof Error) throw result;
      return result;
    },
  } as unknown as S3Client;
  return { client, sent };
}

const s3Error = (name: string, status: number) =>
  Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status } });
const body = (bytes: number[]) => ({ transformToByteArray: async () => Uint8Array.from(bytes) });

describe('S3ObjectStore requests', () => {
  it('sends an inclusive HTTP range for the exclusive port range', async () => {
    const { client, sent } = stubClient(() => ({ Body: body([2, 3, 4]), ContentRange: 'bytes 2-4/10' }));
    const store = new S3ObjectStore({ bucket: 'b', client });
    expect(await store.get('k', { start: 2, end: 5 })).toEqual(Uint8Array.of(2, 3, 4));
    expect(sent[0]!.input).toMatchObject({ Bucket: 'b', Key: 'k', Range: 'bytes=2-4' });
  });

  it('cuts the range out of a body from a server that ignored the Range header', async () => {
    const { client } = stubClient(() => ({ Body: body([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]) }));
    const store = new S3ObjectStore({ bucket: 'b', client });
    expect(await store.get('k', { start: 2, end: 5 })).toEqual(Uint8Array.of(2, 3, 4));
    expect(await store.get('k', { start: 8, end: 50 })).toEqual(Uint8Array.of(8, 9));
  });

  it('maps NoSuchKey and 404 to not found, InvalidRange to empty, and keeps NoSuchBucket', async () => {
    let error = s3Error('NoSuchKey', 404);
    const { client } = stubClient(() => error);
    const store = new S3ObjectStore({ bucket: 'b', client });
    await expect(store.get('k')).rejects.toBeInstanceOf(ObjectNotFoundError);
    error = s3Error('NotFound', 404);
    expect(await store.head('k')).toBeUndefined();
    error = s3Error('InvalidRange', 416);
    expect(await store.get('k', { start: 100, end: 200 })).toEqual(new Uint8Array(0));
    error = s3Error('NoSuchBucket', 404);
    await expect(store.get('k')).rejects.toMatchObject({ name: 'NoSuchBucket' });
  });

  it('follows continuation tokens up to a limit above 1000', async () => {
    const keys = Array.from({ length: 2600 }, (_, i) => `k/${String(i).padStart(5, '0')}`);
    const { client, sent } = stubClient((_, input) => {
      const from = input.ContinuationToken ? Number(input.ContinuationToken) : 0;
      const page = keys.slice(from, from + Number(input.MaxKeys));
      const next = from + page.length;
      return {
        Contents: page.map((Key) => ({ Key, Size: 1, LastModified: new Date(0) })),
        IsTruncated: next < keys.length,
        ...(next < keys.length && { NextContinuationToken: String(next) }),
      };
    });
    const store = new S3ObjectStore({ bucket: 'b', client });
    const page = await store.list('k/', { limit: 2500, startAfter: 'a' });
    expect(page.objects).toHaveLength(2500);
    expect(page.nextStartAfter).toBe(keys[2499]);
    expect(sent.map((s) => [s.input.MaxKeys, s.input.StartAfter, s.input.ContinuationToken])).toEqual([
      [1000, 'a', undefined],
      [1000, undefined, '1000'],
      [500, undefined, '2000'],
    ]);
  });

  it('pages a directory bucket by continuation token, never by StartAfter', async () => {
    const keys = Array.from({ length: 1500 }, (_, i) => `k/${i}`);
    const { client, sent } = stubClient((_, input) => {
      const from = input.ContinuationToken === undefined ? 0 : Number(input.ContinuationToken);
      const next = from + (input.MaxKeys as number);
      return {
        Contents: keys.slice(from, next).map((Key) => ({ Key, Size: 1 })),
        IsTruncated: next < keys.length,
        ...(next < keys.length && { NextContinuationToken: String(next) }),
      };
    });
    const store = new S3ObjectStore({ bucket: 'logs--use1-az4--x-s3', client });
    const first = await store.list('k/', { limit: 1000 });
    const second = await store.list('k/', { startAfter: first.nextStartAfter! });
    expect([...first.objects, ...second.objects].map((o) => o.key)).toEqual(keys);
    expect(second.nextStartAfter).toBeUndefined();
    expect(sent.map((s) => [s.input.StartAfter, s.input.ContinuationToken])).toEqual([
      [undefined, undefined],
      [undefined, '1000'],
    ]);
    await expect(store.list('k/', { startAfter: 'k/5' })).rejects.toBeInstanceOf(RangeError);
  });

  it('deletes in batches of 1000 and reports failures other than missing keys', async () => {
    const { client, sent } = stubClient(() => ({ Errors: [{ Key: 'gone', Code: 'NoSuchKey' }] }));
    const store = new S3ObjectStore({ bucket: 'b', client });
    await store.delete(Array.from({ length: 2001 }, (_, i) => `k/${i}`));
    expect(sent.map((s) => (s.input.Delete as { Objects: unknown[] }).Objects.length)).toEqual([1000, 1000, 1]);
    await store.delete([]);
    expect(sent).toHaveLength(3);

    const denied = stubClient(() => ({ Errors: [{ Key: 'k/1', Code: 'AccessDenied', Message: 'no' }] }));
    await expect(new S3ObjectStore({ bucket: 'b', client: denied.client }).delete(['k/1'])).rejects.toThrow(
      /AccessDenied/,
    );
  });

  it('creates clients that checksum only when required', async () => {
    const client = createS3Client({ region: 'us-east-1', endpoint: 'http://127.0.0.1:1', forcePathStyle: true });
    expect(await client.config.requestChecksumCalculation()).toBe('WHEN_REQUIRED');
    expect(await client.config.responseChecksumValidation()).toBe('WHEN_REQUIRED');
    expect(client.config.forcePathStyle).toBe(true);
    client.destroy();
  });
});

/**
 * What test/support/emulators.ts patches in s3rver for the contract suite, shown on an unpatched
 * s3rver. When an s3rver upgrade fixes a deviation, its case here fails: drop the patch with it.
 */
describe('s3rver 3.7 deviations from S3, unpatched', () => {
  let raw: S3rverHandle;
  beforeAll(async () => {
    raw = await startS3rver({ patchDeviations: false });
  });
  afterAll(async () => {
    await raw?.stop();
  });
  const put = (Key: string, Body: Uint8Array) =>
    raw.client.send(new PutObjectCommand({ Bucket: raw.bucket, Key, Body }));

  it('lists by walking its directories: a/b before a (S3: a < a-b < a/b)', async () => {
    for (const key of ['x/a', 'x/a-b', 'x/a/b']) await put(key, Uint8Array.of(1));
    const res = await raw.client.send(new ListObjectsV2Command({ Bucket: raw.bucket, Prefix: 'x/' }));
    expect(res.Contents?.map((o) => o.Key)).toEqual(['x/a/b', 'x/a-b', 'x/a']);
  });

  it('announces one byte for a ranged GET of an empty object (S3: 416 InvalidRange)', async () => {
    await put('empty', new Uint8Array(0));
    const res = await raw.client.send(new GetObjectCommand({ Bucket: raw.bucket, Key: 'empty', Range: 'bytes=0-9' }));
    try {
      expect(res.$metadata.httpStatusCode).toBe(206);
      expect(res.ContentLength).toBe(1);
      expect(res.ContentRange).toBe('bytes 0-0/0');
    } finally {
      (res.Body as { destroy?: () => void } | undefined)?.destroy?.();
    }
  });
});

describe('directory-bucket paging against s3rver', () => {
  let s3: S3rverHandle;
  beforeAll(async () => {
    s3 = await startS3rver();
  });
  afterAll(async () => {
    await s3?.stop();
  });

  it('reads every key once, page by page, with the cursor a page hands back', async () => {
    const keys = Array.from({ length: 25 }, (_, i) => `d/${String(i).padStart(3, '0')}`);
    for (const key of keys)
      await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: Uint8Array.of(1) }));
    const store = new S3ObjectStore({ bucket: s3.bucket, client: s3.client, directoryBucket: true });
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.list('d/', { limit: 10, ...(cursor !== undefined && { startAfter: cursor }) });
      seen.push(...page.objects.map((o) => o.key));
      cursor = page.nextStartAfter;
    } while (cursor !== undefined);
    expect(seen.sort()).toEqual(keys);
  });
});
