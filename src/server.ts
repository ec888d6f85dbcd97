/**
 * Local entry point (`npm start`): the HTTP app on node over the embedded backend (files + SQLite),
 * or over any backend STORAGE_BACKEND names. Flags override the environment:
 *   --port 8080 --host 127.0.0.1 --data-dir .data --replicas 3 --backend local|memory|aws
 *   --scheduler-interval-ms 30000 (0: no in-process scheduler)
 *   --kafka-port 9092 (0: no Kafka protocol listener) --kafka-advertised-listener host[:port]
 *   --auth-config auth.json (bearer tokens, super.users, authorization: docs/security.md)
 */
import { serve } from '@hono/node-server';
import { parseArgs } from 'node:util';
import { createServices, openStorage, startInProcessScheduler } from './compose.js';
import { serverConfigFromEnv } from './config/server-config.js';
import { createApp } from './http/app.js';
import { startKafkaListener } from './kafka/listener.js';
import { pushSocket } from './http/push-socket.js';

const { values: flags } = parseArgs({
  options: {
    port: { type: 'string' },
    host: { type: 'string' },
    'data-dir': { type: 'string' },
    replicas: { type: 'string' },
    backend: { type: 'string' },
    'scheduler-interval-ms': { type: 'string' },
    'kafka-port': { type: 'string' },
    'kafka-advertised-listener': { type: 'string' },
    'auth-config': { type: 'string' },
  },
});

const env = { ...process.env };
if (flags['data-dir']) env.DATA_DIR = flags['data-dir'];
if (flags.replicas) env.REPLICA_STORES = flags.replicas;
if (flags.backend) env.STORAGE_BACKEND = flags.backend;
if (flags['scheduler-interval-ms']) env.SCHEDULER_INTERVAL_MS = flags['scheduler-interval-ms'];
if (flags['kafka-port']) env.KAFKA_PORT = flags['kafka-port'];
if (flags['kafka-advertised-listener']) env.KAFKA_ADVERTISED_HOST = flags['kafka-advertised-listener'];
if (flags.host) env.HOST = flags.host;
if (flags['auth-config']) env.AUTH_CONFIG = flags['auth-config'];
const config = serverConfigFromEnv(env);
const port = Number(flags.port ?? process.env.PORT ?? 8080);
const hostname = flags.host ?? process.env.HOST ?? '127.0.0.1';

const storage = await openStorage(config.backend); // a SQLite problem fails here, at startup
const services = createServices(config, storage);
const app = createApp(services);
// Push (ws://host:port/v3/push): other processes post to this one's connections at its origin,
// or at PUSH_ENDPOINT when they reach it under another address.
let origin = '';
const push = pushSocket(services, () => process.env.PUSH_ENDPOINT ?? origin);
app.route('/', push.routes);
// This process's release and feature level, for the feature level's raise (docs/deploy.md), kept fresh.
const register = () =>
  services.features.keepRegistered('local-server', Date.now(), (e) =>
    console.log(JSON.stringify({ level: 'warn', msg: 'process registration failed', error: String(e) })),
  );
await register();
setInterval(register, services.features.refreshMs).unref();
// Timers, retention, compaction, segment merge and orphan GC, every SCHEDULER_INTERVAL_MS.
const scheduler = startInProcessScheduler(config, storage, services);
const server = serve({ fetch: app.fetch, port, hostname }, (info) => {
  origin = `http://${hostname.includes(':') ? `[${hostname}]` : hostname}:${info.port}`;
  console.log(
    JSON.stringify({
      level: 'info',
      msg: 'listening',
      url: `http://${hostname}:${info.port}`,
      backend: config.backend.kind,
      release: services.features.release,
      clusterId: config.clusterId,
      authorization: config.security.authorization,
    }),
  );
});
const { kafka } = config;
// A taken port (say, a real Kafka on 9092) leaves the HTTP API serving; the error says why.
const kafkaListener =
  kafka.port > 0
    ? await startKafkaListener({ services, classic: services.groups.classic, ...kafka }).catch((e: unknown) => {
        console.log(
          JSON.stringify({ level: 'error', msg: 'kafka listener not started', port: kafka.port, error: String(e) }),
        );
        return undefined;
      })
    : undefined;
if (kafkaListener)
  console.log(
    JSON.stringify({
      level: 'info',
      msg: 'kafka listening',
      host: kafka.host,
      port: kafkaListener.port,
      advertised: `${kafka.advertisedHost ?? kafka.host}:${kafka.advertisedPort ?? kafkaListener.port}`,
    }),
  );

server.on('upgrade', (req, socket, head) => push.handleUpgrade(req, socket, head));

function shutdown(signal: string) {
  console.log(JSON.stringify({ level: 'info', msg: 'shutting down', signal }));
  void kafkaListener?.close();
  push.close();
  server.close(() => {
    void (scheduler?.stop() ?? Promise.resolve()).finally(() => {
      storage.close();
      process.exit(0);
    });
  });
  setTimeout(() => process.exit(0), 5000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
