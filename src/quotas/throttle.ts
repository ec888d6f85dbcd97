/**
 * Quota enforcement as Kafka's ClientQuotaManager does it: a request is measured after it is
 * served (bytes produced, bytes fetched, handler time), and a client whose usage has run past its
 * rate is throttled for as long as the rate needs to pay the excess back. Kafka answers with
 * throttle_time_ms and mutes the connection; over HTTP a throttled request is refused before any
 * work with THROTTLING_QUOTA_EXCEEDED (429), `Retry-After` (seconds) and `x-throttle-time-ms`,
 * which costs a Lambda nothing to say, where holding the answer back would bill the wait.
 *
 * Each bucket holds up to one second of its rate (Kafka's quota window plays that part) and may
 * go into debt by one request's cost. The buckets live in this process: on Lambda each instance
 * enforces the rate on its own share of the traffic (see docs/cost-model.md for what a shared
 * count would cost, and API Gateway's throttles for the cheap bound).
 */
import type { Clock } from '../clock.js';
import { KafkaError } from '../wire/errors.js';
import type { AppliedQuota, QuotaKey } from './client-quotas.js';

export class ThrottledError extends KafkaError {
  constructor(
    readonly throttleTimeMs: number,
    key: QuotaKey,
  ) {
    super('THROTTLING_QUOTA_EXCEEDED', `The client is over its ${key} quota; retry in ${throttleTimeMs} ms`);
  }
}

interface Bucket {
  tokens: number;
  at: number;
}

export class QuotaBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly clock: Clock) {}

  private refill(q: AppliedQuota): Bucket {
    const now = this.clock.now();
    let b = this.buckets.get(q.bucket);
    if (!b) {
      if (this.buckets.size >= 100_000) this.buckets.clear(); // a bound against unbounded client ids
      b = { tokens: q.rate, at: now };
      this.buckets.set(q.bucket, b);
    }
    b.tokens = Math.min(q.rate, b.tokens + ((now - b.at) / 1000) * q.rate);
    b.at = now;
    return b;
  }

  /** Throws ThrottledError while the bucket is in debt. */
  check(key: QuotaKey, q: AppliedQuota): void {
    const b = this.refill(q);
    if (b.tokens < 0) throw new ThrottledError(Math.ceil((-b.tokens / q.rate) * 1000), key);
  }

  record(q: AppliedQuota, amount: number): void {
    if (amount > 0) this.refill(q).tokens -= amount;
  }
}
