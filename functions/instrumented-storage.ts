/**
 * The Lambda functions' storage metrics: the storage decorator (src/storage/observed-stores.ts)
 * with a listener that counts every call in the current invocation's metrics (observability.ts),
 * and passes it on to an optional listener (the tests that check IAM policies and request counts
 * against the calls a function really makes).
 */
import type { Storage } from '../src/compose.js';
import { observeStorage, type StorageCall, type StorageListener } from '../src/storage/observed-stores.js';
import { addMetric } from './observability.js';

/** Wraps a storage so every call is counted in the current invocation's metrics and reported. */
export function instrumentStorage(storage: Storage, listener?: StorageListener): Storage {
  return observeStorage(storage, (call) => {
    // The S3 adapter sends nothing for an empty delete.
    if (call.op === 'DeleteObjects' && call.keys === 0) return;
    countCall(call);
    listener?.(call);
  });
}

function countCall(call: StorageCall): void {
  switch (call.op) {
    case 'PutObject':
    case 'ListObjectsV2':
    case 'DeleteObjects':
      addMetric('S3WriteRequests');
      return;
    case 'GetObject':
    case 'HeadObject':
      addMetric('S3ReadRequests');
      return;
    case 'GetItem':
    case 'Query':
      addMetric('DynamoDbReadRequests');
      return;
    case 'UpdateItem':
    case 'DeleteItem':
      addMetric('DynamoDbWriteRequests');
      // Commit retries are reported by the commit itself (src/metrics.ts).
      if (call.conditionFailed) addMetric('ConditionFailures');
      return;
  }
}
