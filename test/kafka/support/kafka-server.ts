import { serve, type ServerType } from '@hono/node-server';
import { createServices, createStorage, type Storage } from '../../../src/compose.js';
import { serverConfigFromEnv, type ServerConfig } from '../../../src/config/server-config.js';
import type { AppServices } from '../../../src/services.js';
import { createApp } from '../../../src/http/app.js';
import type { MetadataStore } from '../../../src/storage/ports.js';
import { startKafkaListener, type KafkaListener, type KafkaListenerOptions } from '../../../src/kafka/listener.js';
import { eventLogger } from '../../support/event-logger.js';

export interface TestKafkaServer {
  services: AppServices;
  /** The metadata store under the services, to check what is stored. */
  metadata: MetadataStore;
  kafka: KafkaListener;
  /** `127.0.0.1:{port}` of the Kafka listener. */
  broker: string;
  /** `http://127.0.0.1:{port}/v3/clusters/local` of the HTTP API, in the same process. */
  http: string;
  logs: Record<string, unknown>[];
  close(): Promise<void>;
}

/**
 * The HTTP API and the Kafka listener over one set of services (memory backend), both on port 0.
 * Classic groups complete their first join at once (group.initial.rebalance.delay.ms 0) unless
 * `env` says otherwise: tests of one consumer need not wait Kafka's 3 s.
 */
export async function startKafkaServer(
  options: Partial<KafkaListenerOptions> = {},
  env: Record<string, string> = {},
  storageOf: (config: ServerConfig) => Storage = (config) => createStorage(config.backend),
): Promise<TestKafkaServer> {
  const config = serverConfigFromEnv({
    STORAGE_BACKEND: 'memory',
    SCHEDULER_INTERVAL_MS: '0',
    GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
    ...env,
  });
  const storage = storageOf(config);
  const services = createServices(config, storage);
  const logs: Record<string, unknown>[] = [];
  const kafka = await startKafkaListener({
    services,
    classic: services.groups.classic,
    host: '127.0.0.1',
    port: 0,
    maxFrameBytes: config.kafka.maxFrameBytes,
    ...(config.kafka.tls ? { tls: config.kafka.tls } : {}),
    logger: eventLogger(logs),
    ...options,
  });
  const app = createApp(services, { logError: () => {} });
  const http = await new Promise<{ server: ServerType; port: number }>((resolve) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
      resolve({ server, port: info.port }),
    );
  });
  return {
    services,
    metadata: storage.metadata,
    kafka,
    broker: `127.0.0.1:${kafka.port}`,
    http: `http://127.0.0.1:${http.port}/v3/clusters/local`,
    logs,
    close: async () => {
      await kafka.close();
      await new Promise((r) => http.server.close(r));
      storage.close();
    },
  };
}
