/**
 * S3 Express One Zone sessions carry their mode (issue 31, finding 3). A role granted
 * s3express:CreateSession only with s3express:SessionMode=ReadOnly (the fetch function's) is
 * refused the SDK's default session, which asks for no mode and so gets ReadWrite. The S3 client
 * made with expressSessionMode ReadOnly asks for ReadOnly sessions, and signs its GETs with them.
 *
 * The directory bucket here is the SDK's own HTTP layer answered in-process (no S3 Express
 * emulator exists): CreateSession answers credentials only when the mode asked for is the one the
 * caller's role allows, and a GET answers only with that session's token, as S3 would.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createS3Client, S3ObjectStore } from '../../src/storage/s3-object-store.js';

const BUCKET = 'logs--use1-az4--x-s3';

/** What the test reads of the SDK's HTTP request. */
interface HttpRequest {
  method: string;
  query?: Record<string, unknown>;
  headers: Record<string, string | undefined>;
}

/** A directory bucket whose caller may open sessions of `allowed` mode only. */
function directoryBucket(allowed: 'ReadOnly' | 'ReadWrite') {
  const seen: { sessionModes: (string | undefined)[]; gets: number } = { sessionModes: [], gets: 0 };
  const respond = (statusCode: number, body: string, headers: Record<string, string> = {}) => ({
    // An HTTP response as the SDK's handlers return it (it checks the shape, not the class).
    response: { statusCode, headers, body: Readable.from([Buffer.from(body)]) },
  });
  const handler = {
    handle: async (request: HttpRequest) => {
      if ('session' in (request.query ?? {})) {
        const mode = request.headers['x-amz-create-session-mode'];
        seen.sessionModes.push(mode);
        // No mode is ReadWrite (S3's default).
        if ((mode ?? 'ReadWrite') !== allowed)
          return respond(403, '<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>');
        const expiration = new Date(Date.now() + 300_000).toISOString();
        return respond(
          200,
          `<?xml version="1.0" encoding="UTF-8"?><CreateSessionResult><Credentials><SessionToken>session-${mode ?? 'rw'}</SessionToken><SecretAccessKey>s</SecretAccessKey><AccessKeyId>a</AccessKeyId><Expiration>${expiration}</Expiration></Credentials></CreateSessionResult>`,
        );
      }
      if (request.method === 'GET') {
        seen.gets++;
        if (!request.headers['x-amz-s3session-token']?.startsWith('session-'))
          return respond(403, '<Error><Code>AccessDenied</Code></Error>');
        return respond(200, 'abc', { 'content-length': '3' });
      }
      return respond(501, '');
    },
    updateHttpClientConfig: () => {},
    httpHandlerConfigs: () => ({}),
  };
  return { handler, seen };
}

function storeFor(bucket: ReturnType<typeof directoryBucket>, mode?: 'ReadOnly' | 'ReadWrite') {
  const client = createS3Client({
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
    ...(mode && { expressSessionMode: mode }),
  });
  // The SDK's transport, answered by the bucket above.
  (client.config as { requestHandler: unknown }).requestHandler = bucket.handler;
  return new S3ObjectStore({ bucket: BUCKET, client });
}

describe('S3 Express sessions', () => {
  it('a client made for ReadOnly opens ReadOnly sessions, which a ReadOnly role may open, and reads with them', async () => {
    const bucket = directoryBucket('ReadOnly');
    const store = storeFor(bucket, 'ReadOnly');
    expect(Buffer.from(await store.get('k')).toString()).toBe('abc');
    expect(Buffer.from(await store.get('k2')).toString()).toBe('abc');
    // One session for both GETs (the SDK's session cache is kept).
    expect(bucket.seen).toEqual({ sessionModes: ['ReadOnly'], gets: 2 });
  });

  it("the SDK's default asks for no mode: ReadWrite, which a ReadOnly role is refused", async () => {
    const bucket = directoryBucket('ReadOnly');
    await expect(storeFor(bucket).get('k')).rejects.toThrow(/Access Denied/);
    expect(bucket.seen.sessionModes).toEqual([undefined]);
    expect(bucket.seen.gets).toBe(0);
  });

  it('a ReadWrite client (the default) still works where the role allows ReadWrite sessions', async () => {
    const bucket = directoryBucket('ReadWrite');
    expect(Buffer.from(await storeFor(bucket, 'ReadWrite').get('k')).toString()).toBe('abc');
  });
});
