/**
 * How long an AWS SDK call may take before it is abandoned and tried again: the one place for the
 * timeouts of every S3 and DynamoDB client.
 *
 * Without them a call can hang until the function's own timeout: DynamoDB's socket timeout defaults
 * to 300 s, S3 has none, and the SDK's `requestTimeout` only logs a warning unless
 * `throwOnRequestTimeout` is set. A Lambda thawed after a freeze can hold keep-alive sockets the
 * other end has long forgotten; a call on one of them is never answered. With these, such a call
 * fails with a TimeoutError, which the SDK's standard retry strategy retries (with back-off and
 * jitter) on a fresh connection, and all attempts together fit in the function's timeout.
 *
 * Two workloads:
 * - `request`: the HTTP and push functions (29 s behind API Gateway, 10 s for push and heartbeat).
 *   DynamoDB answers in milliseconds: 3 attempts of at most 2 s each leave the heartbeat's 10 s.
 *   S3 moves at most one request object (a few MiB, well under a second at Lambda's bandwidth) per
 *   call: 3 attempts of at most 5 s each leave most of the 29 s.
 * - `scheduler`: the scheduled function (5 minutes, it stops taking work 15 s before) reads and
 *   writes whole segments and pages of 1 MB: longer attempts, still 3 of them within its minutes.
 */
export interface SdkTimeouts {
  /** TCP (and TLS) connection setup. */
  connectionTimeoutMs: number;
  /** From sending the request to the response's headers (an error, not a warning: throwOnRequestTimeout). */
  requestTimeoutMs: number;
  /** A socket idle this long fails the call: it also covers a response body stalled mid-stream. */
  socketTimeoutMs: number;
  /** Attempts in all, the first included (the SDK's standard retry strategy). */
  maxAttempts: number;
}

export type SdkWorkload = 'request' | 'scheduler';

export const SDK_TIMEOUTS: Readonly<Record<SdkWorkload, { dynamodb: SdkTimeouts; s3: SdkTimeouts }>> = {
  request: {
    dynamodb: { connectionTimeoutMs: 1_000, requestTimeoutMs: 2_000, socketTimeoutMs: 2_000, maxAttempts: 3 },
    s3: { connectionTimeoutMs: 1_000, requestTimeoutMs: 5_000, socketTimeoutMs: 2_000, maxAttempts: 3 },
  },
  scheduler: {
    dynamodb: { connectionTimeoutMs: 1_000, requestTimeoutMs: 5_000, socketTimeoutMs: 5_000, maxAttempts: 3 },
    s3: { connectionTimeoutMs: 1_000, requestTimeoutMs: 30_000, socketTimeoutMs: 10_000, maxAttempts: 3 },
  },
};

/** The client configuration (requestHandler options and attempts) for the given timeouts. */
export function sdkClientTimeouts(t: SdkTimeouts) {
  return {
    maxAttempts: t.maxAttempts,
    requestHandler: {
      connectionTimeout: t.connectionTimeoutMs,
      requestTimeout: t.requestTimeoutMs,
      throwOnRequestTimeout: true,
      socketTimeout: t.socketTimeoutMs,
    },
  };
}

/**
 * Triggers' SQS and SNS on-failure destinations (a message of a few hundred bytes, from a
 * deliverer): answered in milliseconds. A retry that follows a lost answer sends the message twice,
 * which the destination record allows (at least once, the same requestId).
 */
export const DESTINATION_MESSAGE_TIMEOUTS: SdkTimeouts = {
  connectionTimeoutMs: 1_000,
  requestTimeoutMs: 5_000,
  socketTimeoutMs: 5_000,
  maxAttempts: 3,
};
