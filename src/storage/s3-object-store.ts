import {
  CreateSessionCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { S3ExpressIdentityProviderImpl } from '@aws-sdk/middleware-sdk-s3';
import {
  listLimit,
  ObjectNotFoundError,
  type ByteRange,
  type ObjectInfo,
  type ObjectPage,
  type ObjectStore,
} from './ports.js';
import { SDK_TIMEOUTS, sdkClientTimeouts, type SdkTimeouts } from './sdk-timeouts.js';

export interface S3ObjectStoreOptions {
  bucket: string;
  client: S3Client;
  /**
   * An S3 Express One Zone directory bucket (default: the name ends in `--x-s3`, as every directory
   * bucket's does). Its ListObjectsV2 takes no StartAfter and answers in no particular order, so a
   * page's cursor is the continuation token instead of the last key.
   */
  directoryBucket?: boolean;
  /** Times a GET's body is read before its failure is the caller's (default: the SDK's attempts, sdk-timeouts.ts). */
  readAttempts?: number;
}

/** Marks a cursor that is a continuation token (directory buckets), not a key. */
const TOKEN_CURSOR = '\u0000token:';

/** S3's ceiling for both ListObjectsV2's MaxKeys and DeleteObjects' batch. */
const S3_BATCH = 1000;

/** Objects in one S3 bucket (or any S3-compatible server: point the client's endpoint at it). */
export class S3ObjectStore implements ObjectStore {
  readonly name: string;
  private readonly bucket: string;
  private readonly client: S3Client;
  private readonly directoryBucket: boolean;
  private readonly readAttempts: number;

  constructor({ bucket, client, directoryBucket, readAttempts }: S3ObjectStoreOptions) {
    this.bucket = bucket;
    this.client = client;
    this.name = bucket;
    this.directoryBucket = directoryBucket ?? bucket.endsWith('--x-s3');
    this.readAttempts = readAttempts ?? SDK_TIMEOUTS.request.s3.maxAttempts;
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentLength: body.byteLength }),
    );
  }

  async get(key: string, range?: ByteRange): Promise<Uint8Array> {
    if (range && range.end <= range.start) {
      // HTTP cannot express an empty range; the object must still exist.
      if (!(await this.head(key))) throw new ObjectNotFoundError(key);
      return new Uint8Array(0);
    }
    // The SDK retries a call until its answer's headers have come; the body is read here, after
    // that. A body that stalls (the socket timeout, sdk-timeouts.ts) or breaks off is asked for again.
    for (let attempt = 1; ; attempt++) {
      const res = await this.getObject(key, range);
      if (!res) return new Uint8Array(0);
      try {
        const body = res.Body ? await res.Body.transformToByteArray() : new Uint8Array(0);
        return range ? clipToRange(body, range, res.ContentRange) : body;
      } catch (err) {
        if (attempt >= this.readAttempts) throw err;
      }
    }
  }

  /** The GetObject answer, or undefined for a range that starts at or past the object's end. */
  private async getObject(key: string, range: ByteRange | undefined) {
    try {
      return await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          // The port's end is exclusive, HTTP's is inclusive; S3 clips an end past the object.
          ...(range && { Range: `bytes=${Math.max(range.start, 0)}-${range.end - 1}` }),
        }),
      );
    } catch (err) {
      if (isNotFound(err)) throw new ObjectNotFoundError(key);
      // A range starting at or past the end (including any range of an empty object): the object
      // exists (a missing one answers NoSuchKey), and the clipped range is empty.
      if (errorName(err) === 'InvalidRange' || httpStatus(err) === 416) return undefined;
      throw err;
    }
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { key, size: res.ContentLength ?? 0, lastModified: res.LastModified?.getTime() ?? 0 };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list(prefix: string, page: { startAfter?: string; limit?: number } = {}): Promise<ObjectPage> {
    const limit = listLimit(page.limit);
    const objects: ObjectInfo[] = [];
    if (limit === 0) return { objects }; // what S3 answers MaxKeys=0 with, without a billed LIST
    const resumed = page.startAfter?.startsWith(TOKEN_CURSOR) ? page.startAfter.slice(TOKEN_CURSOR.length) : undefined;
    if (this.directoryBucket && page.startAfter !== undefined && resumed === undefined) {
      throw new RangeError(`Directory bucket ${this.bucket} pages by the cursor of the previous page, not by a key`);
    }
    let continuationToken = resumed;
    let truncated = false;
    do {
      const res = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix,
          MaxKeys: Math.min(limit - objects.length, S3_BATCH),
          // StartAfter only counts on the first request; the token carries the position after.
          ...(continuationToken
            ? { ContinuationToken: continuationToken }
            : page.startAfter !== undefined && { StartAfter: page.startAfter }),
        }),
      );
      for (const o of res.Contents ?? []) {
        if (o.Key === undefined) continue;
        objects.push({ key: o.Key, size: o.Size ?? 0, lastModified: o.LastModified?.getTime() ?? 0 });
      }
      truncated = res.IsTruncated === true;
      continuationToken = res.NextContinuationToken;
    } while (truncated && continuationToken && objects.length < limit);
    if (this.directoryBucket)
      return truncated && continuationToken
        ? { objects, nextStartAfter: TOKEN_CURSOR + continuationToken }
        : { objects };
    const last = objects.at(-1);
    return truncated && last ? { objects, nextStartAfter: last.key } : { objects };
  }

  async delete(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += S3_BATCH) {
      const chunk = keys.slice(i, i + S3_BATCH);
      const res = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: chunk.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      const failed = (res.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length > 0) {
        const first = failed[0]!;
        throw new Error(
          `S3 DeleteObjects failed for ${failed.length} of ${chunk.length} keys in ${this.bucket}, ` +
            `first ${first.Key}: ${first.Code} ${first.Message}`,
        );
      }
    }
  }
}

export interface CreateS3ClientOptions {
  /** e.g. `http://127.0.0.1:4566` for LocalStack or an emulator; omit for AWS. */
  endpoint?: string;
  region?: string;
  /** Bucket in the path rather than the host name; most emulators need it. */
  forcePathStyle?: boolean;
  credentials?: S3ClientConfig['credentials'];
  /** Default: the request-serving functions' (sdk-timeouts.ts). */
  timeouts?: SdkTimeouts;
  /**
   * The mode of the sessions opened on S3 Express One Zone directory buckets (default ReadWrite).
   * The SDK's own session provider asks for none, which S3 takes as ReadWrite; a role that may
   * only open ReadOnly sessions (the `s3express:SessionMode` condition) needs ReadOnly asked for.
   */
  expressSessionMode?: 'ReadWrite' | 'ReadOnly';
}

/**
 * An S3 client that sends and checks checksums only where an operation requires them. The SDK's
 * default (always, with CRC32) is not understood by s3rver and some S3-compatible servers; on AWS
 * it makes no difference to correctness.
 */
export function createS3Client(options: CreateS3ClientOptions = {}): S3Client {
  const mode = options.expressSessionMode ?? 'ReadWrite';
  const client: S3Client = new S3Client({
    ...sdkClientTimeouts(options.timeouts ?? SDK_TIMEOUTS.request.s3),
    ...(options.endpoint !== undefined && { endpoint: options.endpoint }),
    ...(options.region !== undefined && { region: options.region }),
    ...(options.forcePathStyle !== undefined && { forcePathStyle: options.forcePathStyle }),
    ...(options.credentials !== undefined && { credentials: options.credentials }),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // The SDK's session cache and refresh, with the mode in the CreateSession it sends.
    ...(mode !== 'ReadWrite' && {
      s3ExpressIdentityProvider: new S3ExpressIdentityProviderImpl(async (bucket) => {
        const { Credentials } = await client.send(new CreateSessionCommand({ Bucket: bucket, SessionMode: mode }));
        if (!Credentials) throw new Error(`CreateSession on ${bucket} answered without credentials`);
        return { Credentials };
      }),
    }),
  });
  return client;
}

/**
 * The requested bytes out of a response body. S3 answers a Range with exactly those bytes, but
 * a server that ignores Range (or mis-parses `bytes=0-0`, as s3rver does) sends more: cut the
 * body by where Content-Range says it starts (the whole object when there is none).
 */
function clipToRange(body: Uint8Array, range: ByteRange, contentRange: string | undefined): Uint8Array {
  const bodyStart = Number(/^bytes (\d+)-/.exec(contentRange ?? '')?.[1] ?? 0);
  const from = Math.max(range.start - bodyStart, 0);
  const to = Math.max(range.end - bodyStart, from);
  return from === 0 && to >= body.byteLength ? body : body.slice(from, to);
}

function isNotFound(err: unknown): boolean {
  const name = errorName(err);
  if (name === 'NoSuchBucket') return false; // a configuration error, not a missing object
  return name === 'NoSuchKey' || name === 'NotFound' || httpStatus(err) === 404;
}

function errorName(err: unknown): string | undefined {
  return err instanceof Error ? err.name : undefined;
}

function httpStatus(err: unknown): number | undefined {
  const meta = (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata;
  return meta?.httpStatusCode;
}
