/**
 * Latency profiles of the scale simulation (`--profile NAME`): how long one call to each store
 * takes, injected before the call reaches the memory store. The defaults are round figures from
 * AWS's own published numbers, in-region, for small items and objects:
 *
 * - DynamoDB, 5 ms: "consistent single-digit millisecond performance at any scale" (Amazon DynamoDB
 *   Developer Guide, "What is Amazon DynamoDB?",
 *   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Introduction.html).
 * - S3, 15 ms: "when making small requests (for example, less than 512 KB) ... median latencies are
 *   often in the tens of milliseconds range" (Best Practices Design Patterns: Optimizing Amazon S3
 *   Performance, "Timeouts and Retries for Latency-Sensitive Applications",
 *   https://docs.aws.amazon.com/whitepapers/latest/s3-optimizing-performance-best-practices/timeouts-and-retries-for-latency-sensitive-applications.html).
 *
 * And the limits the simulation's rates are held against:
 * - DynamoDB: 400 KB per item; 3,000 read units and 1,000 write units per second per partition,
 *   which a single partition key (and so a single item) never exceeds ("Service, account, and table
 *   quotas in Amazon DynamoDB", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).
 * - S3: 3,500 PUT/COPY/POST/DELETE and 5,500 GET/HEAD requests per second per partitioned prefix
 *   ("Best practices design patterns: optimizing Amazon S3 performance",
 *   https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html).
 */
export interface LatencyProfile {
  name: string;
  /** Per DynamoDB call (GetItem, Query, UpdateItem, DeleteItem). */
  metadataMs: number;
  /** Per S3 call (PutObject, GetObject, HeadObject, ListObjectsV2, DeleteObjects). */
  objectMs: number;
}

export const PROFILES: Record<string, LatencyProfile> = {
  aws: { name: 'aws', metadataMs: 5, objectMs: 15 },
  /** A slow day: DynamoDB p99 and S3 small-object p99 of the same sources' ranges. */
  slow: { name: 'slow', metadataMs: 10, objectMs: 50 },
  /** No latency: only the calls' counts and the CPU time. */
  none: { name: 'none', metadataMs: 0, objectMs: 0 },
};

export const LIMITS = {
  itemBytes: 400 * 1024,
  writeUnitsPerSecond: 1_000,
  readUnitsPerSecond: 3_000,
  putsPerSecondPerPrefix: 3_500,
  getsPerSecondPerPrefix: 5_500,
} as const;
