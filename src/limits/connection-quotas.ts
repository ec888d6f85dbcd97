/**
 * Which new connections a listener takes (Kafka's ConnectionQuotas): at most max.connections at
 * once, at most max.connections.per.ip from one address (max.connections.per.ip.overrides names
 * addresses that may open more, or fewer), and at most max.connection.creation.rate new ones a
 * second. A refused connection is closed at once and counted by cause. Kafka blocks its acceptor
 * on max.connections and the creation rate instead; a node server cannot stop accepting, so here
 * the client sees its connection closed and reconnects after its reconnect.backoff.ms.
 */
export interface ConnectionLimits {
  /** Kafka's max.connections. */
  maxConnections: number;
  /** Kafka's max.connections.per.ip. */
  maxConnectionsPerIp: number;
  /** Kafka's max.connections.per.ip.overrides: address -> its own limit. */
  maxConnectionsPerIpOverrides: ReadonlyMap<string, number>;
  /** Kafka's max.connection.creation.rate: new connections a second (bursts of up to one second's worth). */
  maxConnectionCreationRate: number;
}

/** Why a connection was refused: the name of the limit it met. */
export type RefusalCause = 'max.connections' | 'max.connections.per.ip' | 'max.connection.creation.rate';

export class ConnectionQuotas {
  readonly #perIp = new Map<string, number>();
  #count = 0;
  /** The creation rate's token bucket: whole connections available now, refilled at the rate. */
  #tokens: number;
  #refilledAt: number;

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.#tokens = limits.maxConnectionCreationRate;
    this.#refilledAt = now();
  }

  /** Connections open now. */
  get count(): number {
    return this.#count;
  }

  /** Counts a new connection from `ip` in, or says which limit refuses it (then nothing is counted). */
  tryOpen(ip: string): RefusalCause | undefined {
    const fromIp = this.#perIp.get(ip) ?? 0;
    if (fromIp >= (this.limits.maxConnectionsPerIpOverrides.get(ip) ?? this.limits.maxConnectionsPerIp))
      return 'max.connections.per.ip';
    if (this.#count >= this.limits.maxConnections) return 'max.connections';
    const rate = this.limits.maxConnectionCreationRate;
    const t = this.now();
    this.#tokens = Math.min(rate, this.#tokens + ((t - this.#refilledAt) / 1000) * rate);
    this.#refilledAt = t;
    if (this.#tokens < 1) return 'max.connection.creation.rate';
    this.#tokens -= 1;
    this.#perIp.set(ip, fromIp + 1);
    this.#count++;
    return undefined;
  }

  /** A connection tryOpen let in has closed. */
  close(ip: string): void {
    const fromIp = this.#perIp.get(ip) ?? 0;
    if (fromIp <= 1) this.#perIp.delete(ip);
    else this.#perIp.set(ip, fromIp - 1);
    this.#count = Math.max(0, this.#count - 1);
  }
}

/** A peer address as limits and ACLs name it: an IPv4 peer of a dual-stack socket without its ::ffff: prefix. */
export const peerAddress = (remoteAddress: string | undefined): string =>
  (remoteAddress ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
