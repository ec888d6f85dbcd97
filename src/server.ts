/**
 * Local entry point (`npm start`): the HTTP app on node over the embedded backend (files + SQLite),
 * or over any backend STORAGE_BACKEND names. Flags override the environment (`npm start -- --help`,
 * src/config/server-args.ts). Once up it prints the URLs it serves on stderr (stdout keeps one
 * JSON log line per event). The bounds against hostile clients (connection caps, memory pools, timeouts) are the environment's:
 * docs/security.md and the README's configuration table.
 */
import { serve } from '@hono/node-server';
import { createServices, openStorage, startInProcessScheduler } from './compose.js';
import { parseServerArgs, SERVER_USAGE, ServerArgsError } from './config/server-args.js';
import {
  failureBucketOptions,
  failureMessageOptions,
  lambdaOptions,
  serverConfigFromEnv,
  type ServerConfig,
} from './config/server-config.js';
import { createApp } from './http/app.js';
import { withBodyPool } from './http/body-pool.js';
import { startKafkaListener } from './kafka/listener.js';
import { pushSocket } from './http/push-socket.js';
import { MemoryPool } from './limits/memory-pool.js';
import { failureBucketWriter } from './storage/failure-bucket-writer.js';
import { failureMessageSender } from './storage/failure-message-sender.js';
import { lazyLambdaInvoker } from './storage/lazy-lambda-invoker.js';
import { IntervalMetrics, loggerOf, type MetricValues } from './metrics.js';

// A bad flag or variable is told in a line and the usage, not a stack; --help prints the usage.
let config: ServerConfig;
let port: number;
let hostname: string;
try {
  const args = parseServerArgs(process.argv.slice(2), process.env);
  if (args.help) {
    console.log(SERVER_USAGE);
    process.exit(0);
  }
  config = serverConfigFromEnv(args.env);
  port = Number(args.env.PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ServerArgsError(`PORT (--port) must be a port number, got ${JSON.stringify(args.env.PORT)}`);
  hostname = args.env.HOST ?? '127.0.0.1';
} catch (e) {
  console.error((e as Error).message);
  console.error(
    e instanceof ServerArgsError ? `\n${SERVER_USAGE}` : 'See README.md, "Configuration", or `npm start -- --help`.',
  );
  process.exit(2);
}

/** This process's log lines (the services', the listener's, the scheduler's, the app's): JSON on stdout. */
const stdoutLogger = loggerOf((level, msg, fields) => console.log(JSON.stringify({ level, msg, ...fields })));

const storage = await openStorage(config.backend); // a SQLite problem fails here, at startup
const metrics = new IntervalMetrics();
const services = createServices(config, storage, undefined, {
  metrics,
  logger: stdoutLogger,
  runTriggers: true,
  lambda: lazyLambdaInvoker(lambdaOptions(config)),
  putFailureObject: failureBucketWriter(failureBucketOptions(config)),
  sendFailureMessage: failureMessageSender(failureMessageOptions(config)),
});
const app = createApp(services, { logger: stdoutLogger });
// Push (ws://host:port/v3/push): other processes post to this one's connections at its origin,
// or at PUSH_ENDPOINT when they reach it under another address.
let origin = '';
const push = pushSocket(services, () => process.env.PUSH_ENDPOINT ?? origin);
app.route('/', push.routes);
// This process's release and feature level, for the feature level's raise (docs/deploy.md), kept fresh.
const register = () =>
  services.features.keepRegistered('local-server', Date.now(), (e) =>
    stdoutLogger.warn('process registration failed', { error: String(e) }),
  );
await register();
setInterval(register, services.features.refreshMs).unref();
// Timers, retention, compaction, segment merge and orphan GC, every SCHEDULER_INTERVAL_MS.
const scheduler = startInProcessScheduler(config, storage, services, stdoutLogger);
// Triggers run here, woken by this process's commits; what a crash or another process left
// undelivered is re-armed now and on the scheduler's tick (docs/triggers.md).
const rearmTriggers = () =>
  services.triggers.runner
    .rearm()
    .catch((e: unknown) => stdoutLogger.warn('trigger re-arm failed', { error: String(e) }));
void rearmTriggers();
const triggerTick =
  config.scheduler.intervalMs > 0 ? setInterval(rearmTriggers, config.scheduler.intervalMs) : undefined;
triggerTick?.unref();
const { http } = config;
const bodyPool = new MemoryPool(http.queuedMaxRequestBytes, (used) => metrics.gauge('HttpMemoryPoolUsedBytes', used));
const fetch = withBodyPool(app.fetch, bodyPool, {
  maxRequestBytes: config.limits.maxRequestBytes,
  waitMs: http.poolWaitMs,
  metrics,
});
const serverOptions = {
  headersTimeout: http.headersTimeoutMs,
  requestTimeout: http.requestTimeoutMs,
  // How often node checks the two timeouts (its default, 30 s, would let a slow sender run over by that much).
  connectionsCheckingInterval: Math.min(1000, http.headersTimeoutMs),
};
let listening: (port: number) => void = () => {};
const httpPort = new Promise<number>((resolve) => {
  listening = resolve;
});
const server = serve({ fetch, port, hostname, serverOptions }, (info) => {
  origin = `http://${hostname.includes(':') ? `[${hostname}]` : hostname}:${info.port}`;
  listening(info.port);
  stdoutLogger.info('listening', {
    url: `http://${hostname}:${info.port}`,
    backend: config.backend.kind,
    release: services.features.release,
    clusterId: config.clusterId,
    authorization: config.security.authorization,
  });
});
server.maxConnections = http.maxConnections;
server.on('drop', () => metrics.add('HttpConnectionsRefused', 1));
// node's own answer to a request that broke a timeout or could not be parsed, counted.
server.on('clientError', (e: NodeJS.ErrnoException, socket) => {
  const timedOut = e.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  if (timedOut) metrics.add('HttpRequestTimeouts', 1);
  if (socket.writable && socket.bytesWritten === 0)
    socket.end(
      timedOut
        ? 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n'
        : e.code === 'HPE_HEADER_OVERFLOW'
          ? 'HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n'
          : 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n',
    );
  socket.destroy();
});
const { kafka } = config;
// A taken port (say, a real Kafka on 9092) leaves the HTTP API serving; the error says why.
const kafkaListener =
  kafka.port > 0
    ? await startKafkaListener({
        services,
        classic: services.groups.classic,
        ...kafka,
        metrics,
        logger: stdoutLogger,
      }).catch((e: unknown) => {
        stdoutLogger.error('kafka listener not started', { port: kafka.port, error: String(e) });
        return undefined;
      })
    : undefined;
// Kafka's names for what a client must set: security.protocol, and sasl.mechanism when SASL is on.
const { saslMechanisms } = config.security;
const securityProtocol = `${saslMechanisms.length > 0 ? 'SASL_' : ''}${kafka.tls ? 'SSL' : 'PLAINTEXT'}`;
if (kafkaListener)
  stdoutLogger.info('kafka listening', {
    host: kafka.host,
    port: kafkaListener.port,
    advertised: `${kafka.advertisedHost ?? kafka.host}:${kafka.advertisedPort ?? kafkaListener.port}`,
    securityProtocol,
    ...(saslMechanisms.length > 0 ? { saslMechanisms } : {}),
    ...(kafka.tls ? { sslClientAuth: kafka.tls.clientAuth } : {}),
  });

server.on('upgrade', (req, socket, head) => push.handleUpgrade(req, socket, head));

// What a new user opens first: the URLs this process serves.
await httpPort;
const kafkaAddress = kafkaListener
  ? `${kafka.advertisedHost ?? kafka.host}:${kafka.advertisedPort ?? kafkaListener.port} (${securityProtocol}${saslMechanisms.length > 0 ? `: ${saslMechanisms.join(', ')}` : ''})`
  : kafka.port > 0
    ? `not started (port ${kafka.port} is taken?)`
    : 'off (KAFKA_PORT=0)';
console.error(
  [
    `s3-kafka-log ${services.features.release} serving (${config.backend.kind} backend):`,
    `  REST API (Confluent v3)  ${origin}/v3/clusters/${config.clusterId}`,
    `  console                  ${origin}/console/`,
    `  OpenAPI document         ${origin}/openapi.json`,
    `  Kafka listener           ${kafkaAddress}`,
  ].join('\n'),
);

// The metrics as CloudWatch EMF lines per interval: the totals (Service dimension, as the
// functions' own), and each trigger's own series (Service and Trigger).
const emfLine = (values: MetricValues, trigger?: string) => {
  const names = Object.keys(values);
  if (names.length === 0) return;
  const { namespace, service } = config.metrics;
  process.stdout.write(
    `${JSON.stringify({
      _aws: {
        Timestamp: Date.now(),
        CloudWatchMetrics: [
          {
            Namespace: namespace,
            Dimensions: [trigger === undefined ? ['Service'] : ['Service', 'Trigger']],
            Metrics: names.map((n) => ({ Name: n, Unit: n.endsWith('Bytes') ? 'Bytes' : 'Count' })),
          },
        ],
      },
      Service: service,
      ...(trigger !== undefined && { Trigger: trigger }),
      ...values,
    })}\n`,
  );
};
const emfTimer =
  config.metrics.intervalMs > 0
    ? setInterval(() => {
        emfLine(metrics.drain());
        for (const [trigger, values] of metrics.drainByTrigger()) emfLine(values, trigger);
      }, config.metrics.intervalMs)
    : undefined;
emfTimer?.unref();

function shutdown(signal: string) {
  stdoutLogger.info('shutting down', { signal });
  void kafkaListener?.close();
  push.close();
  server.close(() => {
    void Promise.all([scheduler?.stop(), services.triggers.runner.close()]).finally(() => {
      storage.close();
      process.exit(0);
    });
  });
  setTimeout(() => process.exit(0), 5000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
