/**
 * The listener's bounds across connections (src/limits, docs/security.md), each shown doing its
 * job and counted: max.connections, max.connections.per.ip (+ overrides) and
 * max.connection.creation.rate refuse new connections; sasl.server.max.receive.size closes an
 * unauthenticated connection announcing a large frame; connection.failed.authentication.delay.ms
 * holds back a failed authentication's answer; queued.max.request.bytes stops reading when the
 * requests of all connections fill it, serving small requests meanwhile.
 * Other loopback addresses (127.0.0.2, ...) stand for other client hosts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { KafkaLimits } from '../../src/config/server-config.js';
import * as m from '../../src/kafka/protocol/messages/index.js';
import type { GaugeName, MetricName, Metrics } from '../../src/metrics.js';
import { encodeRecordBatch } from '../../src/wire/record-batch.js';
import { startKafkaServer, type TestKafkaServer } from './support/kafka-server.js';
import { RawClient } from './support/raw-client.js';
import { until } from '../support/until.js';

/** Every count and every gauge's latest and highest value. */
class Recorder implements Metrics {
  counts = new Map<MetricName, number>();
  latest = new Map<GaugeName, number>();
  max = new Map<GaugeName, number>();
  add(name: MetricName, value: number) {
    this.counts.set(name, (this.counts.get(name) ?? 0) + value);
  }
  gauge(name: GaugeName, value: number) {
    this.latest.set(name, value);
    this.max.set(name, Math.max(value, this.max.get(name) ?? 0));
  }
  count(name: MetricName) {
    return this.counts.get(name) ?? 0;
  }
}

const MiB = 1024 * 1024;
const limits = (over: Partial<KafkaLimits>): KafkaLimits => ({
  saslServerMaxReceiveSize: 512 * 1024,
  queuedMaxRequestBytes: 64 * MiB,
  maxConnections: 1000,
  maxConnectionsPerIp: 1000,
  maxConnectionsPerIpOverrides: new Map(),
  maxConnectionCreationRate: 10_000,
  failedAuthenticationDelayMs: 0,
  ...over,
});

let s: TestKafkaServer | undefined;
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await s?.close();
  s = undefined;
});

async function start(over: Partial<KafkaLimits>, env: Record<string, string> = {}, maxFrameBytes = 8 * MiB) {
  const metrics = new Recorder();
  s = await startKafkaServer({ limits: limits(over), metrics, maxFrameBytes }, env);
  return metrics;
}

/** A connection from `from`; whether the server serves it (ApiVersions answered) or closed it at once. */
async function connect(from: string): Promise<{ c: RawClient; served: boolean }> {
  const c = await RawClient.open(s!.broker, undefined, from);
  clients.push(c);
  try {
    const r = await c.request(m.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' });
    return { c, served: r.body.errorCode === 0 };
  } catch {
    return { c, served: false };
  }
}

const saslConfig = () => {
  const file = join(mkdtempSync(join(tmpdir(), 'limits-')), 'auth.json');
  writeFileSync(file, JSON.stringify({ 'sasl.plain.users': { alice: 'alice-secret' } }));
  return { AUTH_CONFIG: file };
};

async function authenticate(c: RawClient, password = 'alice-secret') {
  await c.request(m.SaslHandshake, 1, { mechanism: 'PLAIN' });
  return (await c.request(m.SaslAuthenticate, 2, { authBytes: Buffer.from(`\u0000alice\u0000${password}`) })).body;
}

describe('connection quotas', () => {
  it('refuses connections over max.connections.per.ip, per address, with overrides, and counts each', async () => {
    const metrics = await start({
      maxConnectionsPerIp: 2,
      maxConnectionsPerIpOverrides: new Map([['127.0.0.3', 4]]),
    });
    const served = async (from: string, n: number) => {
      const out: boolean[] = [];
      for (let i = 0; i < n; i++) out.push((await connect(from)).served);
      return out;
    };
    expect(await served('127.0.0.2', 3)).toEqual([true, true, false]);
    expect(await served('127.0.0.3', 5)).toEqual([true, true, true, true, false]);
    expect(metrics.count('KafkaConnectionsRefusedMaxConnectionsPerIp')).toBe(2);
    expect(metrics.count('KafkaConnectionsRefused')).toBe(2);
    // A closed connection frees its address's place.
    clients[0]!.close();
    await until('5 connections', () => metrics.latest.get('KafkaConnections') === 5);
    expect((await connect('127.0.0.2')).served).toBe(true);
    expect(metrics.max.get('KafkaConnections')).toBe(6);
  });

  it('refuses connections over max.connections in total', async () => {
    const metrics = await start({ maxConnections: 3 });
    const served = [];
    for (const from of ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']) served.push((await connect(from)).served);
    expect(served).toEqual([true, true, true, false]);
    expect(metrics.count('KafkaConnectionsRefusedMaxConnections')).toBe(1);
    expect(metrics.count('KafkaConnectionsRefused')).toBe(1);
  });

  it('refuses connections over max.connection.creation.rate, and takes new ones as the rate allows', async () => {
    const metrics = await start({ maxConnectionCreationRate: 4 });
    const served = [];
    for (let i = 0; i < 6; i++) served.push((await connect('127.0.0.2')).served);
    expect(served.filter(Boolean).length).toBeGreaterThanOrEqual(4);
    expect(served.slice(0, 4)).toEqual([true, true, true, true]);
    const refused = served.filter((x) => !x).length;
    expect(refused).toBeGreaterThanOrEqual(1);
    expect(metrics.count('KafkaConnectionsRefusedCreationRate')).toBe(refused);
    await new Promise((r) => setTimeout(r, 600));
    expect((await connect('127.0.0.2')).served).toBe(true);
  });
});

describe('before and after authentication', () => {
  it('closes an unauthenticated connection that announces a frame above sasl.server.max.receive.size, before reading it', async () => {
    const metrics = await start({ saslServerMaxReceiveSize: 4096 }, saslConfig());
    const c = await RawClient.open(s!.broker);
    clients.push(c);
    const header = Buffer.alloc(4);
    header.writeInt32BE(4097);
    c.write(header);
    expect(await c.waitClosed()).toBe(true);
    expect(metrics.count('KafkaConnectionsRefusedSaslReceiveSize')).toBe(1);
    expect(metrics.count('KafkaConnectionsRefused')).toBe(1);
    // Authenticated, the same connection may send frames up to socket.request.max.bytes.
    const d = await RawClient.open(s!.broker);
    clients.push(d);
    expect((await authenticate(d)).errorCode).toBe(0);
    await s!.services.topics.create({ name: 'big', partitionCount: 1, replicationFactor: 1 });
    const records = Buffer.from(
      encodeRecordBatch([{ key: null, value: Buffer.alloc(100_000, 7), headers: [], timestamp: Date.now() }]),
    );
    const r = await d.request(m.Produce, 7, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 5000,
      topicData: [{ name: 'big', partitionData: [{ index: 0, records }] }],
    });
    expect(r.body.responses[0].partitionResponses[0].errorCode).toBe(0);
    expect(metrics.count('KafkaConnectionsRefused')).toBe(1);
  });

  it('answers a failed authentication after connection.failed.authentication.delay.ms, then closes', async () => {
    const metrics = await start({ failedAuthenticationDelayMs: 400 }, saslConfig());
    const c = await RawClient.open(s!.broker);
    clients.push(c);
    await c.request(m.SaslHandshake, 1, { mechanism: 'PLAIN' });
    const sent = Date.now();
    c.write(c.frame(m.SaslAuthenticate, 2, { authBytes: Buffer.from('\u0000alice\u0000wrong') }));
    const answer = await c.readFrame();
    expect(answer).toBeDefined();
    expect(Date.now() - sent).toBeGreaterThanOrEqual(390);
    expect(await c.waitClosed()).toBe(true);
    expect(metrics.count('KafkaFailedAuthentications')).toBe(1);
    // The right password is answered at once.
    const d = await RawClient.open(s!.broker);
    clients.push(d);
    const t = Date.now();
    expect((await authenticate(d)).errorCode).toBe(0);
    expect(Date.now() - t).toBeLessThan(390);
  });
});

describe('queued.max.request.bytes', () => {
  it('stops reading large requests while the pool is full, serves small ones meanwhile, and reads on as memory comes back', async () => {
    const pool = 4 * MiB;
    const metrics = await start({ queuedMaxRequestBytes: pool }, {}, 2 * MiB);
    await s!.services.topics.create({ name: 'pooled', partitionCount: 1, replicationFactor: 1 });
    // Six connections announce 2 MiB frames and send 1.5 MiB of each, then stall.
    const hogs: RawClient[] = [];
    for (let i = 0; i < 6; i++) {
      const c = await RawClient.open(s!.broker, undefined, `127.0.0.${10 + i}`);
      clients.push(c);
      hogs.push(c);
      const partial = Buffer.alloc(4 + 1.5 * MiB);
      partial.writeInt32BE(2 * MiB);
      c.write(partial);
    }
    await until('4 MiB of the pool in use', () => (metrics.latest.get('KafkaMemoryPoolUsedBytes') ?? 0) >= 2 * 2 * MiB);
    await new Promise((r) => setTimeout(r, 200));
    // Two frames fit; the other four connections wait, holding no more than their small allowance.
    expect(metrics.max.get('KafkaMemoryPoolUsedBytes')).toBeLessThanOrEqual(pool + 6 * 64 * 1024);
    // A small request is served while the pool is full.
    const bystander = (await connect('127.0.0.2')).c;
    const md = await bystander.request(m.Metadata, 9, {
      topics: null,
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    expect(md.body.brokers).toHaveLength(1);
    // A produce larger than the allowance waits for the pool...
    const records = Buffer.from(
      encodeRecordBatch([{ key: null, value: Buffer.alloc(200_000, 1), headers: [], timestamp: Date.now() }]),
    );
    const producer = await RawClient.open(s!.broker, undefined, '127.0.0.3');
    clients.push(producer);
    producer.write(
      producer.frame(m.Produce, 7, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 5000,
        topicData: [{ name: 'pooled', partitionData: [{ index: 0, records }] }],
      }),
    );
    await expect(producer.readFrame(500)).rejects.toThrow(/no response/);
    // ... and is served once the stalled connections go away and give their memory back.
    for (const h of hogs) h.close();
    const answer = await producer.readFrame(5000);
    expect(answer).toBeDefined();
    await until('the pool given back', () => metrics.latest.get('KafkaMemoryPoolUsedBytes') === 0);
    expect(metrics.max.get('KafkaMemoryPoolUsedBytes')).toBeLessThanOrEqual(pool + 6 * 64 * 1024);
  });

  it('keeps unauthenticated connections to the lower half of the pool', async () => {
    const pool = 4 * MiB;
    const metrics = await start(
      { queuedMaxRequestBytes: pool, saslServerMaxReceiveSize: 512 * 1024 },
      saslConfig(),
      2 * MiB,
    );
    // Twenty unauthenticated connections announce 512 KiB frames and stall inside them.
    for (let i = 0; i < 20; i++) {
      const c = await RawClient.open(s!.broker, undefined, `127.0.1.${i + 1}`);
      clients.push(c);
      const partial = Buffer.alloc(4 + 400 * 1024);
      partial.writeInt32BE(512 * 1024);
      c.write(partial);
    }
    await until('1.5 MiB of the pool in use', () => (metrics.latest.get('KafkaMemoryPoolUsedBytes') ?? 0) >= 1.5 * MiB);
    await new Promise((r) => setTimeout(r, 200));
    expect(metrics.max.get('KafkaMemoryPoolUsedBytes')).toBeLessThanOrEqual(pool / 2 + 20 * 64 * 1024);
    // An authenticated client still gets a large request read.
    const d = await RawClient.open(s!.broker);
    clients.push(d);
    expect((await authenticate(d)).errorCode).toBe(0);
    await s!.services.topics.create({ name: 'half', partitionCount: 1, replicationFactor: 1 });
    const records = Buffer.from(
      encodeRecordBatch([{ key: null, value: Buffer.alloc(900 * 1024, 2), headers: [], timestamp: Date.now() }]),
    );
    const r = await d.request(m.Produce, 7, {
      transactionalId: null,
      acks: -1,
      timeoutMs: 5000,
      topicData: [{ name: 'half', partitionData: [{ index: 0, records }] }],
    });
    expect(r.body.responses[0].partitionResponses[0].errorCode).toBe(0);
  });
});
