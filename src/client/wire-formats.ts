/**
 * How records travel, and what the client learns about the server by using it: the one place for
 * format probing. A Kafka client picks the newest API version the broker has; here a server from
 * before a feature answers its route 404 NOT_FOUND (a missing topic is UNKNOWN_TOPIC_OR_PARTITION,
 * never a bare NOT_FOUND), so the first request of a kind finds out, and a refused request did
 * nothing: the caller sends the same records the older way at once, without a retry.
 */
import { KafkaClientError, KafkaConfigError } from './errors.js';

/** 'record-batch' (Kafka RecordBatch v2 bytes), 'json' (the v3 JSON API) or 'auto'. */
export type WireFormat = 'auto' | 'record-batch' | 'json';

const WIRE_FORMATS: readonly string[] = ['auto', 'record-batch', 'json'] satisfies WireFormat[];

/** Refuses a format that is none of the three (a producer's, consumer's or connection's config). */
export function checkWireFormat(format: unknown): void {
  if (format !== undefined && !WIRE_FORMATS.includes(format as string))
    throw new KafkaConfigError(`format must be 'auto', 'record-batch' or 'json' (got ${String(format)})`);
}

/** What an answer told about a feature of the server: unknown until the first one. */
export type Support = 'unknown' | 'supported' | 'unsupported';

/** Whether an error says the server has no such route. */
export const noSuchRoute = (e: unknown): e is KafkaClientError =>
  e instanceof KafkaClientError && e.type === 'NOT_FOUND' && e.status === 404;

/**
 * A route of a newer server (the multi-partition produce, the multi-partition fetch), tried on
 * first use by each producer or consumer. Only its first answer can say it is missing: once it
 * answered, a 404 is an error like any other.
 */
export class RouteProbe {
  state: Support = 'unknown';

  /** @param missing error types that, besides 404 NOT_FOUND, say the server cannot serve the route. */
  constructor(private readonly missing: readonly string[] = []) {}

  get available(): boolean {
    return this.state !== 'unsupported';
  }

  answered(): void {
    this.state = 'supported';
  }

  /** Whether `e` says the route is missing (then remembered): the caller goes the older way. */
  refused(e: unknown): boolean {
    if (this.state !== 'unknown') return false;
    if (!noSuchRoute(e) && !(e instanceof KafkaClientError && this.missing.includes(e.type))) return false;
    this.state = 'unsupported';
    return true;
  }
}

/**
 * The record-batch API of one connection, shared by its producers and consumers: with format
 * 'auto' records travel as record batches until the server is found without them, then as JSON
 * for good.
 */
export class RecordBatchSupport {
  state: Support = 'unknown';

  constructor(readonly connectionFormat: WireFormat) {}

  /** The format of a producer or consumer configured with `format` (else the connection's). */
  formatOf(format: WireFormat | undefined): WireFormat {
    return format ?? this.connectionFormat;
  }

  /** Whether records travel as record batches for a producer or consumer configured with `format`. */
  use(format: WireFormat | undefined): boolean {
    const f = this.formatOf(format);
    if (f === 'json') return false;
    if (f === 'record-batch') return true;
    return this.state !== 'unsupported';
  }

  answered(): void {
    this.state = 'supported';
  }

  /**
   * A record-batch request refused as a missing route or media type: with format 'auto' the server
   * is remembered as without them and the caller sends JSON instead (true); else an error.
   */
  refused(format: WireFormat | undefined, e: unknown): boolean {
    if (this.formatOf(format) !== 'auto') return false;
    if (!noSuchRoute(e) && !(e instanceof KafkaClientError && e.type === 'UNSUPPORTED_MEDIA_TYPE')) return false;
    this.state = 'unsupported';
    return true;
  }

  /** A record-batch fetch answered with the JSON record list: with format 'auto', remembered. */
  answeredWithJson(format: WireFormat | undefined): void {
    if (this.formatOf(format) === 'auto') this.state = 'unsupported';
  }
}
