/**
 * The one place the client speaks HTTP: it resolves the cluster's base URL, signs requests, applies
 * request.timeout.ms, and turns every failure into a typed KafkaClientError. Everything above it
 * speaks topics, partitions and offsets.
 */
import { createSigner, type AuthConfig, type RequestSigner } from './auth.js';
import { KafkaClientError, KafkaConnectionError, KafkaTimeoutError, errorFromBody } from './errors.js';

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
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Overrides request.timeout.ms for this request (e.g. a long-poll fetch adds its wait). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Attached to errors for context. */
  topic?: string;
  partition?: number;
}

export interface Response<T> {
  status: number;
  body: T;
}

const CLUSTER_PATH = /^(.*)\/v3\/clusters\/([^/]+)\/?$/;

export const enc = encodeURIComponent;

export class Transport {
  readonly requestTimeoutMs: number;
  private readonly origin: string;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly sign: RequestSigner;
  private clusterBase: Promise<string> | undefined;

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
    else if (config.clusterId) this.clusterBase = Promise.resolve(`${this.origin}/v3/clusters/${enc(config.clusterId)}`);
    this.requestTimeoutMs = config.requestTimeoutMs ?? 30_000;
    this.fetchImpl = config.fetch ?? globalThis.fetch;
    this.sign = createSigner(config.auth);
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

  /** A request under the cluster's base (`path` starts with `/`). Throws on any status >= 400. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<Response<T>> {
    return this.send<T>(method, `${await this.base()}${path}`, options);
  }

  private async send<T>(method: string, url: string, options: RequestOptions): Promise<Response<T>> {
    const u = new URL(url);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = { accept: 'application/json', ...this.config.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.config.clientId) headers['user-agent'] = this.config.clientId;
    const context = { topic: options.topic, partition: options.partition };
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    let res: globalThis.Response;
    let text: string;
    try {
      const signed = await this.sign({ method, url: u, headers, body });
      res = await this.fetchImpl(u, { method, headers: signed, body, signal });
      text = await res.text();
    } catch (e) {
      if (options.signal?.aborted) throw new KafkaClientError('ABORTED', `${method} ${u.pathname} was aborted`, { ...context, cause: e });
      if (timeout.aborted) throw new KafkaTimeoutError(`${method} ${u.pathname} got no answer within ${timeoutMs} ms`, { ...context, cause: e });
      if (e instanceof KafkaClientError) throw e;
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (e as Error).message;
      throw new KafkaConnectionError(`${method} ${u.origin}${u.pathname} failed: ${why}`, { ...context, cause: e });
    }
    let parsed: unknown = undefined;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = { message: text.slice(0, 200) };
      }
    }
    if (res.status >= 400) throw errorFromBody(res.status, parsed, context);
    return { status: res.status, body: parsed as T };
  }
}
