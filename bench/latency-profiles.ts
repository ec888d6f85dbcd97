/**
 * Latency distributions of the AWS stores for bench/aws.ts: each call waits a time drawn from a
 * log-normal distribution fitted to a p50 and a p99 (a long right tail, as service latencies have),
 * plus, for S3 bodies, the bytes at one request's bandwidth. bench/scale's profiles are one
 * constant per store on simulated time; these are distributions on real time, for tails.
 *
 * Published figures each profile uses (AWS publishes medians and claims, not p99s: the p99s marked
 * "assumed" are ours, chosen so that a profile's PUT p99 sits where the peers' published produce
 * figures imply, and are flags to change):
 * - S3 Standard: "when making small requests (for example, less than 512 KB) ... median latencies
 *   are often in the tens of milliseconds range" (Best Practices Design Patterns: Optimizing Amazon
 *   S3 Performance, "Timeouts and Retries for Latency-Sensitive Applications"), so p50 25 ms; p99
 *   150 ms assumed (Bufstream's published produce p99 of 500 ms on S3 Standard bounds it from
 *   above). Bandwidth: "make one concurrent request for each 85-90 MB/s of desired network
 *   throughput" (Amazon S3 User Guide, "Performance guidelines for Amazon S3"), so 85 MB/s per request.
 * - S3 Express One Zone: "consistent single-digit millisecond data access" and "up to 10x faster
 *   than S3 Standard" (Amazon S3 User Guide, "What is S3 Express One Zone?"), so p50 5 ms; p99 20 ms
 *   assumed (WarpStream's published produce p99 on Express One Zone, 169 ms, holds several of them).
 *   Bandwidth as S3 Standard's.
 * - DynamoDB: "consistent single-digit millisecond performance at any scale" (Amazon DynamoDB
 *   Developer Guide, "What is Amazon DynamoDB?"), so p50 4 ms for a read and 6 ms for a conditional
 *   write; p99 10 ms and 15 ms assumed.
 */
export interface Distribution {
  p50Ms: number;
  p99Ms: number;
}

export interface ObjectStoreProfile {
  name: string;
  put: Distribution;
  get: Distribution;
  /** Bytes of a body per millisecond of one request (85 MB/s = 85,000 bytes/ms). */
  bytesPerMs: number;
}

export interface LatencyProfile {
  objects: ObjectStoreProfile;
  metadataRead: Distribution;
  metadataWrite: Distribution;
}

const S3_BYTES_PER_MS = 85_000;

export const OBJECT_PROFILES: Record<string, ObjectStoreProfile> = {
  's3-standard': {
    name: 's3-standard',
    put: { p50Ms: 25, p99Ms: 150 },
    get: { p50Ms: 20, p99Ms: 120 },
    bytesPerMs: S3_BYTES_PER_MS,
  },
  's3-express': {
    name: 's3-express',
    put: { p50Ms: 5, p99Ms: 20 },
    get: { p50Ms: 4, p99Ms: 15 },
    bytesPerMs: S3_BYTES_PER_MS,
  },
  none: { name: 'none', put: { p50Ms: 0, p99Ms: 0 }, get: { p50Ms: 0, p99Ms: 0 }, bytesPerMs: Infinity },
};

export const DYNAMODB = {
  read: { p50Ms: 4, p99Ms: 10 },
  write: { p50Ms: 6, p99Ms: 15 },
} as const satisfies Record<string, Distribution>;

export function latencyProfile(objectProfile: string): LatencyProfile {
  const objects = OBJECT_PROFILES[objectProfile];
  if (!objects) throw new Error(`unknown profile ${objectProfile} (${Object.keys(OBJECT_PROFILES).join(', ')})`);
  const none = objectProfile === 'none';
  return {
    objects,
    metadataRead: none ? objects.put : DYNAMODB.read,
    metadataWrite: none ? objects.put : DYNAMODB.write,
  };
}

/** z of the 99th percentile of the standard normal distribution. */
const Z99 = 2.3263;

/** One draw from the log-normal distribution with this p50 and p99 (0 when p50 is 0). */
export function sampleMs(d: Distribution, random: () => number = Math.random): number {
  if (d.p50Ms <= 0) return 0;
  const sigma = Math.log(d.p99Ms / d.p50Ms) / Z99;
  // Box-Muller: a standard normal draw from two uniform ones.
  const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return d.p50Ms * Math.exp(sigma * z);
}
