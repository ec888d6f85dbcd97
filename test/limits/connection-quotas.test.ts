import { describe, expect, it } from 'vitest';
import { parsePerIpOverrides, serverConfigFromEnv } from '../../src/config/server-config.js';
import { ConnectionQuotas, peerAddress } from '../../src/limits/connection-quotas.js';

const limits = {
  maxConnections: 4,
  maxConnectionsPerIp: 2,
  maxConnectionsPerIpOverrides: new Map([
    ['10.0.0.9', 3],
    ['10.0.0.6', 0],
  ]),
  maxConnectionCreationRate: 1000,
};

describe('ConnectionQuotas', () => {
  it('refuses by address (with overrides), then in total, and frees a place when a connection closes', () => {
    const q = new ConnectionQuotas(limits);
    expect([q.tryOpen('10.0.0.1'), q.tryOpen('10.0.0.1'), q.tryOpen('10.0.0.1')]).toEqual([
      undefined,
      undefined,
      'max.connections.per.ip',
    ]);
    expect(q.tryOpen('10.0.0.6')).toBe('max.connections.per.ip');
    expect([q.tryOpen('10.0.0.9'), q.tryOpen('10.0.0.9'), q.tryOpen('10.0.0.9')]).toEqual([
      undefined,
      undefined,
      'max.connections',
    ]);
    expect(q.count).toBe(4);
    q.close('10.0.0.1');
    expect(q.tryOpen('10.0.0.9')).toBeUndefined();
  });

  it('takes max.connection.creation.rate new connections a second, in bursts of one second', () => {
    let now = 0;
    const q = new ConnectionQuotas(
      { ...limits, maxConnections: 1000, maxConnectionsPerIp: 1000, maxConnectionCreationRate: 3 },
      () => now,
    );
    const open = () => q.tryOpen('10.0.0.1');
    expect([open(), open(), open(), open()]).toEqual([undefined, undefined, undefined, 'max.connection.creation.rate']);
    now += 340; // one more token
    expect([open(), open()]).toEqual([undefined, 'max.connection.creation.rate']);
    now += 10_000; // never more than one second's worth
    expect([open(), open(), open(), open()]).toEqual([undefined, undefined, undefined, 'max.connection.creation.rate']);
  });
});

describe('configuration', () => {
  it('parses max.connections.per.ip.overrides as Kafka writes it, IPv6 included, and refuses what is not address:limit', () => {
    expect(parsePerIpOverrides('10.0.0.5:200, ::1:50,[fe80::1]:7')).toEqual(
      new Map([
        ['10.0.0.5', 200],
        ['::1', 50],
        ['fe80::1', 7],
      ]),
    );
    expect(() => parsePerIpOverrides('10.0.0.5')).toThrow(/address:limit/);
    expect(() => parsePerIpOverrides('10.0.0.5:x')).toThrow(/address:limit/);
  });

  it('has defaults for every limit, and takes them from the environment', () => {
    const d = serverConfigFromEnv({ STORAGE_BACKEND: 'memory' });
    expect(d.kafka.limits).toMatchObject({
      saslServerMaxReceiveSize: 512 * 1024,
      queuedMaxRequestBytes: 256 * 1024 * 1024,
      maxConnections: 1000,
      maxConnectionsPerIp: 100,
      maxConnectionCreationRate: 100,
      failedAuthenticationDelayMs: 100,
    });
    expect(d.http).toEqual({
      queuedMaxRequestBytes: 128 * 1024 * 1024,
      poolWaitMs: 5000,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 60_000,
      maxConnections: 1000,
    });
    const c = serverConfigFromEnv({
      STORAGE_BACKEND: 'memory',
      KAFKA_MAX_CONNECTIONS_PER_IP: '0',
      KAFKA_MAX_CONNECTIONS_PER_IP_OVERRIDES: '10.1.1.1:5',
      HTTP_MAX_CONNECTIONS: '7',
    });
    expect(c.kafka.limits.maxConnectionsPerIp).toBe(0);
    expect(c.kafka.limits.maxConnectionsPerIpOverrides.get('10.1.1.1')).toBe(5);
    expect(c.http.maxConnections).toBe(7);
  });
});

it('names an IPv4 peer of a dual-stack socket without its ::ffff: prefix', () => {
  expect(peerAddress('::ffff:10.0.0.1')).toBe('10.0.0.1');
  expect(peerAddress('::1')).toBe('::1');
  expect(peerAddress(undefined)).toBe('');
});
