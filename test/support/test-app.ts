import { createServices, createStorage, type ServiceOptions, type Storage } from '../../src/compose.js';
import { lazyLambdaInvoker } from '../../src/storage/lazy-lambda-invoker.js';
import { lambdaOptions, serverConfigFromEnv, type ServerConfig } from '../../src/config/server-config.js';
import { createApp } from '../../src/http/app.js';
import type { Clock } from '../../src/clock.js';

export const BASE = '/v3/clusters/local';

/**
 * The HTTP app over a given storage (memory by default), driven through `app.request()`. A classic
 * group's first join completes at once (group.initial.rebalance.delay.ms 0) unless `env` says otherwise.
 */
export function testApp(
  options: {
    storage?: Storage;
    clock?: Clock;
    env?: Record<string, string>;
    runTriggers?: boolean;
    /** Lambda targets' invocations: Lambda's Invoke through the SDK, at `AWS_ENDPOINT_URL_LAMBDA` of `env`. */
    lambdaTargets?: boolean;
    /** Triggers' on-failure destinations in S3, SQS or SNS: their adapters. */
    destinations?: Pick<ServiceOptions, 'putFailureObject' | 'sendFailureMessage'>;
  } = {},
) {
  const config: ServerConfig = serverConfigFromEnv({
    STORAGE_BACKEND: 'memory',
    GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
    ...options.env,
  });
  const storage = options.storage ?? createStorage(config.backend);
  const services = createServices(config, storage, options.clock, {
    runTriggers: options.runTriggers ?? false,
    ...(options.lambdaTargets && { lambda: lazyLambdaInvoker(lambdaOptions(config)) }),
    ...options.destinations,
  });
  const app = createApp(services, { logError: () => {} });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path.startsWith('/') ? path : `${BASE}/${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  return { app, services, storage, call };
}
