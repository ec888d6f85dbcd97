/**
 * Triggers' S3 on-failure destinations: one PutObject into a bucket the trigger names by ARN
 * (src/triggers/failure-bucket.ts builds the object). One S3 store per bucket per process, over the
 * S3 adapter, loaded on the first write: only deliverers build this (the local server, the
 * scheduled function), and one without an S3 destination never loads the S3 client for it.
 */
import type { ObjectStore } from './ports.js';

export interface FailureBucketOptions {
  /** Another endpoint than S3's (tests: s3rver; path-style then). */
  endpoint?: string;
  forcePathStyle?: boolean;
  region?: string;
  /** Fixed credentials (tests); otherwise the SDK's default chain (the function's role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

export type PutFailureObject = (bucket: string, key: string, body: Uint8Array) => Promise<void>;

export function failureBucketWriter(options: FailureBucketOptions = {}): PutFailureObject {
  const stores = new Map<string, Promise<ObjectStore>>();
  const storeFor = (bucket: string) => {
    let store = stores.get(bucket);
    if (!store) {
      store = import('./s3-object-store.js').then(
        ({ S3ObjectStore, createS3Client }) => new S3ObjectStore({ bucket, client: createS3Client(options) }),
      );
      stores.set(bucket, store);
    }
    return store;
  };
  return async (bucket, key, body) => (await storeFor(bucket)).put(key, body);
}
