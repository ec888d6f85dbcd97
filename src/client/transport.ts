/**
 * The one place the client speaks HTTP: it resolves the cluster's base URL, signs requests, applies
 * request.timeout.ms, and turns every failure into a typed KafkaClientError. Everything above it
 * speaks topics, partitions and offsets.
 */
import { createSigner, type AuthConfig, type RequestSigner } from './auth.js';
import { KafkaClientError, KafkaConnectionError, KafkaTimeoutError, errorFromBody } from './errors.js';
import { RECORD_BATCH_MEDIA_TYPE } from '../wire/protocol.js';
import { BINARY_MEDIA_TYPES } from '../wire/media-types.js';
import { type Exchange, type Exchanger, fetchExchanger, nodeExchanger } from './http-exchange.js';
import { checkRequestSize, requestSizeLimit, type RequestSizeLimit } from './request-size.js';
import { checkWireFormat, RecordBatchSupport, type WireFormat } from './wire-formats.js';

export interface ConnectionConfig {
  /** The server: `http://127.0.0.1:8080`, a deployed API's URL, or a full `.../v3/clusters/{id}`. */
  url: string;
  /** The cluster id when `url` does not name it; otherwise the server's first cluster. */
  clusterId?: string;
  auth?: AuthConfig;
  /** Kafka's request.timeout.ms: how long one HTTP request may take (default 30000). */
  requestTimeoutMs?: number;
  /** Sent as `user-agent` (Kafka's client.id). */
  clientId?: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** A fetch implementation (defaults to the global one). */
  fetch?: typeof globalThis.fetch;
  /**
   * How records travel (produce and fetch): `'record-batch'` (Kafka RecordBatch v2 bytes,
   * `application/vnd.kafka.record-batch.v2`), `'json'` (the v3 JSON API, base64 data), or `'auto'`
   * (the default): record batches, falling back to JSON for good if the server has no record-batch
   * API, as a Kafka client picks the newest API version the broker supports. Producer and consumer
   * configs may override it.
   */
  format?: WireFormat;
  /**
   * The push endpoint consumers wait on instead of polling (docs/client.md, "Waiting for records"):
   * the deployed stack's `PushUrl` output (`wss://...`), or false for none. Default: `/v3/push` on
   * the server's origin (`ws://` for `http://`), which the local server serves.
   */
  pushUrl?: string | false;
  /**
   * Where consumer-group heartbeats go, when not to `url`: the deployed stack's `HeartbeatUrl`
   * output (a Lambda function URL, `https://....lambda-url.{region}.on.aws`), which serves the
   * heartbeat route alone and costs no API Gateway request (docs/cost-model.md). SigV4 auth signs
   * for it with service `lambda`.
   */
  heartbeatUrl?: string;
  /**
   * Kafka's max.request.size for every request: a larger body fails with PAYLOAD_TOO_LARGE before it
   * is sent, and producers keep their requests within it. Default: for an API Gateway or Lambda
   * function URL (`*.execute-api.*.amazonaws.com`, `*.lambda-url.*.on.aws`), what fits in a Lambda
   * invocation (LAMBDA_MAX_REQUEST_BYTES, 4,669,440); otherwise none (the server answers 413 with
   * its own bound). Set it to LAMBDA_MAX_REQUEST_BYTES behind a custom domain name.
   */
  maxRequestBytes?: number;
}

export type { WireFormat };

export { RECORD_BATCH_MEDIA_TYPE };

const isParts = (b: unknown): b is readonly Uint8Array[] => Array.isArray(b);

/** Answers handed to the caller as bytes. */
const BINARY_TYPES = new Set(BINARY_MEDIA_TYPES);

/** A list repeats its parameter (`user=a&user=b`). */
export type Query = Record<string, string | number | boolean | readonly string[] | undefined>;

export interface RequestOptions {
  query?: Query;
  /** A JSON body. */
  body?: unknown;
  /** A binary body (instead of `body`), sent with `contentType`; parts are sent one after the other, not copied together. */
  bytes?: Uint8Array | readonly Uint8Array[];
  contentType?: string;
  /** The Accept header (default application/json). A binary answer's body is a Buffer. */
  accept?: string;
  /** Overrides request.timeout.ms for this request (e.g. a long-poll fetch adds its wait). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Attached to errors for context. */
  topic?: string;
  partition?: number;
}

export interface Response<T> {
  status: number;
  /** Parsed JSON, or a Buffer when the server answered with a binary media type. */
  body: T;
  headers: Headers;
  /** The answer's media type (without parameters), e.g. application/json. */
  contentType: string;
}

const CLUSTER_PATH = /^(.*)\/v3\/clusters\/([^/]+)\/?$/;

export const enc = encodeURIComponent;

export class Transport {
  readonly requestTimeoutMs: number;
  private readonly origin: string;
  private readonly exchange: Exchanger;
  private readonly sign: RequestSigner;
  private clusterBase: Promise<string> | undefined;
  /** What the server told about the record-batch API (shared by the producers and consumers of this connection). */
  readonly recordBatches: RecordBatchSupport;
  /** The largest body a request may have, or undefined for no bound of the client's own. */
  readonly maxRequestBytes: number | undefined;
  private readonly sizeLimit: RequestSizeLimit;

  constructor(private readonly config: ConnectionConfig) {
    if (!config.url) throw new KafkaClientError('INVALID_CONFIG', 'A server URL is required');
    let parsed: URL;
    try {
      parsed = new URL(config.url);
    } catch {
      throw new KafkaClientError('INVALID_CONFIG', `Not a URL: ${config.url}`);
    }
    const trimmed = parsed.toString().replace(/\/+$/, '');
    const m = CLUSTER_PATH.exec(trimmed);
    this.origin = m ? m[1]! : trimmed;
    if (m) this.clusterBase = Promise.resolve(trimmed);
    else if (config.clusterId)
      this.clusterBase = Promise.resolve(`${this.origin}/v3/clusters/${enc(config.clusterId)}`);
    this.requestTimeoutMs = config.requestTimeoutMs ?? 30_000;
    this.exchange = config.fetch ? fetchExchanger(config.fetch) : nodeExchanger();
    this.sign = createSigner(config.auth);
    this.sizeLimit = requestSizeLimit(parsed, config.maxRequestBytes);
    this.maxRequestBytes = this.sizeLimit?.maxBytes;
    checkWireFormat(config.format);
    this.recordBatches = new RecordBatchSupport(config.format ?? 'auto');
  }

  /** Where consumers open their push connection, or undefined for none. */
  get pushUrl(): string | undefined {
    const p = this.config.pushUrl;
    if (p === false) return undefined;
    return p ?? `${this.origin.replace(/^http/, 'ws')}/v3/push`;
  }

  /** The headers of a WebSocket upgrade to `url`: the connection's own, signed like any request. */
  async upgradeHeaders(url: string): Promise<Record<string, string>> {
    const headers: Record<string, string> = { ...this.config.headers };
    if (this.config.clientId) headers['user-agent'] = this.config.clientId;
    return this.sign({ method: 'GET', url: new URL(url.replace(/^ws/, 'http')), headers, body: undefined });
  }

  /** `{origin}/v3/clusters/{id}`, asking the server for its cluster when the config names none. */
  base(): Promise<string> {
    this.clusterBase ??= this.send<{ data: { cluster_id: string }[] }>('GET', `${this.origin}/v3/clusters`, {}).then(
      (res) => {
        const id = res.body.data[0]?.cluster_id;
        if (!id) throw new KafkaClientError('NOT_FOUND', `${this.origin} serves no cluster`);
        return `${this.origin}/v3/clusters/${enc(id)}`;
      },
      (e) => {
        this.clusterBase = undefined;
        throw e;
      },
    );
    return this.clusterBase;
  }

  async clusterId(): Promise<string> {
    return decodeURIComponent(CLUSTER_PATH.exec(await this.base())![2]!);
  }

  /** A heartbeat under the cluster's path: at `heartbeatUrl` when configured, else like `request`. */
  async heartbeatRequest<T>(method: string, path: string, options: RequestOptions = {}): Promise<Response<T>> {
    const at = this.config.heartbeatUrl;
    if (!at) return this.request<T>(method, path, options);
    const clusterPath = new URL(await this.base()).pathname;
    return this.send<T>(method, `${at.replace(/\/+$/, '')}${clusterPath}${path}`, options);
  }

  /** A request under the cluster's base (`path` starts with `/`). Throws on any status >= 400. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<Response<T>> {
    return this.send<T>(method, `${await this.base()}${path}`, options);
  }

  private async send<T>(method: string, url: string, options: RequestOptions): Promise<Response<T>> {
    const u = new URL(url);
    for (const [k, v] of Object.entries(options.query ?? {})) {
      if (Array.isArray(v)) for (const item of v) u.searchParams.append(k, item);
      else if (v !== undefined) u.searchParams.set(k, String(v));
    }
    const body = options.bytes ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
    // Only a signature over the body (SigV4) needs it in one piece.
    const whole = isParts(body) && this.config.auth?.type === 'sigv4' ? Buffer.concat(body) : body;
    const headers: Record<string, string> = { accept: options.accept ?? 'application/json', ...this.config.headers };
    if (options.bytes !== undefined) headers['content-type'] = options.contentType ?? 'application/octet-stream';
    else if (body !== undefined) headers['content-type'] = 'application/json';
    // Kafka's client.id, which client quotas name (x-client-id; user-agent for older servers and logs).
    if (this.config.clientId) headers['user-agent'] = headers['x-client-id'] = this.config.clientId;
    const context = { topic: options.topic, partition: options.partition };
    checkRequestSize(this.sizeLimit, body, `${method} ${u.pathname}`);
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    let res: Exchange;
    try {
      const signed = await this.sign({ method, url: u, headers, body: isParts(whole) ? undefined : whole });
      res = await this.exchange(u, {
        method,
        headers: signed,
        ...(whole !== undefined ? { body: whole } : {}),
        signal,
      });
    } catch (e) {
      if (options.signal?.aborted)
        throw new KafkaClientError('ABORTED', `${method} ${u.pathname} was aborted`, { ...context, cause: e });
      if (timeout.aborted)
        throw new KafkaTimeoutError(`${method} ${u.pathname} got no answer within ${timeoutMs} ms`, {
          ...context,
          cause: e,
        });
      if (e instanceof KafkaClientError) throw e;
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (e as Error).message;
      throw new KafkaConnectionError(`${method} ${u.origin}${u.pathname} failed: ${why}`, { ...context, cause: e });
    }
    const contentType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (res.status < 400 && BINARY_TYPES.has(contentType)) {
      return { status: res.status, body: res.body as T, headers: res.headers, contentType };
    }
    const text = res.body.toString('utf8');
    let parsed: unknown;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = { message: text.slice(0, 200) };
      }
    }
    if (res.status >= 400) {
      // A quota's throttle time (x-throttle-time-ms, else Retry-After seconds): retries wait at least that long, as Kafka clients do.
      const throttle = Number(
        res.headers.get('x-throttle-time-ms') ?? Number(res.headers.get('retry-after') ?? NaN) * 1000,
      );
      throw errorFromBody(res.status, parsed, {
        ...context,
        ...(Number.isFinite(throttle) && throttle > 0 ? { throttleTimeMs: throttle } : {}),
      });
    }
    return { status: res.status, body: parsed as T, headers: res.headers, contentType };
  }
}
