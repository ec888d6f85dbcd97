import { KafkaError } from '../../wire/errors.js';
import type { ClassicGroupCoordinator } from '../../groups/classic-coordinator.js';
import type { Logger } from '../../metrics.js';
import type { AppServices } from '../../services.js';
import type { ScramServer } from '../../authz/scram.js';
import type { ShareSessions } from '../share-sessions.js';

/** What Metadata and FindCoordinator tell clients: this listener, the one broker. */
export interface Broker {
  nodeId: number;
  host: string;
  port: number;
}

export interface ConnectionState {
  /** SASL: 'none' until a handshake, then 'handshaken', then 'authenticated'. */
  sasl: 'none' | 'handshaken' | 'authenticated';
  /** The mechanism the handshake chose. */
  mechanism?: string;
  /** A SCRAM exchange under way (between its two SaslAuthenticate rounds). */
  scram?: ScramServer;
  /**
   * Who the connection is, for ACLs: `User:<SASL user>`; without SASL the TLS client certificate's
   * mapped subject, else User:ANONYMOUS.
   */
  principal: string;
  /** The peer's address as ACLs name hosts (an IPv4 peer of a dual-stack socket without its ::ffff:). */
  host: string;
  /** Set by a handler whose answer must be the connection's last (a failed authentication, as Kafka closes it). */
  closeAfterAnswer?: boolean;
}

export interface RequestContext {
  services: AppServices;
  classic: ClassicGroupCoordinator;
  broker: Broker;
  clientId: string;
  clientHost: string;
  /** Aborted when the connection closes: long polls and join barriers stop waiting. */
  signal: AbortSignal;
  connection: ConnectionState;
  /** The SASL mechanisms the listener enables (sasl.enabled.mechanisms); empty: no SASL. */
  saslMechanisms: readonly string[];
  /** SASL/PLAIN users (user -> password), when PLAIN is enabled. */
  plainUsers?: ReadonlyMap<string, string>;
  /** Kafka's auto.create.topics.enable. */
  autoCreateTopics: boolean;
  /** The listener's share sessions (ShareFetch, ShareAcknowledge). */
  shareSessions: ShareSessions;
  /** Where the connection's lines go (the host's Logger). */
  logger: Logger;
}

// biome-ignore lint/suspicious/noExplicitAny: decoded message bodies are typed by the message definitions at run time
type Body = any;

/** Answers one request (already decoded); undefined sends nothing (Produce with acks=0). */
export type Handler = (ctx: RequestContext, req: Body, version: number) => Promise<Body | undefined>;

/** Kafka's error code for a failure; anything that is not a KafkaError is logged and UNKNOWN_SERVER_ERROR. */
export function errorCodeOf(ctx: RequestContext, e: unknown): number {
  if (e instanceof KafkaError) return e.code;
  ctx.logger.error('kafka request failed', { error: String(e), stack: e instanceof Error ? e.stack : undefined });
  return -1;
}

export const errorMessageOf = (e: unknown): string => (e instanceof KafkaError ? e.message : 'Unexpected server error');

/** A ConsumerGroupHeartbeat or ShareGroupHeartbeat that failed: the same answer shape for both. */
export function heartbeatFailed(ctx: RequestContext, e: unknown) {
  return {
    throttleTimeMs: 0,
    errorCode: errorCodeOf(ctx, e),
    errorMessage: errorMessageOf(e),
    memberId: null,
    memberEpoch: -1,
    heartbeatIntervalMs: 0,
    assignment: null,
  };
}

/** Per-item work in parallel, each failure turned into its own error code (Kafka answers per partition). */
export async function settle<T, R>(
  items: readonly T[],
  run: (item: T) => Promise<R>,
  onError: (item: T, e: unknown) => R,
): Promise<R[]> {
  return Promise.all(items.map((i) => run(i).catch((e: unknown) => onError(i, e))));
}
