import { describe, expect, it } from 'vitest';
import { serverConfigFromEnv } from '../../src/config/server-config.js';

describe('serverConfigFromEnv reads the environment variables', () => {
  it('gives the defaults when nothing is set', () => {
    const config = serverConfigFromEnv({});
    expect(config.clusterId).toBe('local');
    expect(config.backend).toEqual({ kind: 'local', dataDir: '.data', replicaStores: 1, fsync: false });
    expect(config.limits).toEqual({
      maxRequestBytes: 8 * 1024 * 1024,
      maxFetchBytes: 8 * 1024 * 1024,
      maxFetchWaitMs: 25_000,
    });
    expect(config.kafka.port).toBe(9092);
    expect(config.security.cacheMs).toBe(5000);
  });

  it('reads numbers, choices and texts as given', () => {
    const config = serverConfigFromEnv({
      STORAGE_BACKEND: 'aws',
      BUCKETS: 'a, b',
      TABLE_NAME: 't',
      S3_EXPRESS_SESSION_MODE: 'ReadOnly',
      MAX_FETCH_WAIT_MS: '0',
      MAX_BACKGROUND_BYTES: '1024',
      KAFKA_PORT: '0',
      AUTHORIZATION: 'true',
      ACL_CACHE_MS: '30000',
    });
    expect(config.backend).toMatchObject({
      kind: 'aws',
      buckets: ['a', 'b'],
      table: 't',
      s3ExpressSessionMode: 'ReadOnly',
    });
    expect(config.limits).toMatchObject({ maxFetchWaitMs: 0, maxBackgroundBytes: 1024 });
    expect(config.kafka.port).toBe(0);
    expect(config.security).toMatchObject({ authorization: true, cacheMs: 30000 });
  });

  it('names every bad variable in one error', () => {
    expect(() =>
      serverConfigFromEnv({
        KAFKA_PORT: '70000',
        MAX_REQUEST_BYTES: '0',
        DEFAULT_PARTITIONS: '1.5',
        FSYNC: 'yes',
        CLUSTER_ID: '',
        MAX_FETCH_BYTES: 'lots',
      }),
    ).toThrow(
      'Invalid configuration: CLUSTER_ID: must not be empty; FSYNC: must be one of true, false (got "yes"); ' +
        'DEFAULT_PARTITIONS: must be a whole number (got "1.5"); MAX_REQUEST_BYTES: must be at least 1 (got 0); ' +
        'MAX_FETCH_BYTES: must be a whole number (got "lots"); KAFKA_PORT: must be at most 65535 (got 70000)',
    );
  });
});
