/**
 * Each client default is written once (PRODUCER_DEFAULTS, CONSUMER_DEFAULTS): an unset config
 * resolves to exactly those values.
 */
import { describe, expect, it } from 'vitest';
import { CONSUMER_DEFAULTS, Consumer, PRODUCER_DEFAULTS } from '../../src/client/index.js';
import { resolveProducerConfig } from '../../src/client/producer/producer.js';
import { Transport } from '../../src/client/transport.js';

describe('client defaults', () => {
  it('an empty producer config resolves to PRODUCER_DEFAULTS', () => {
    const resolved = resolveProducerConfig({}, 30_000);
    expect(resolved).toMatchObject(PRODUCER_DEFAULTS);
    expect(resolved).toMatchObject({ acks: 'all', idempotent: true, requestTimeoutMs: 30_000 });
  });

  it('an empty consumer config resolves to CONSUMER_DEFAULTS', () => {
    const consumer = new Consumer(new Transport({ url: 'http://127.0.0.1:1' }));
    expect((consumer as unknown as { c: object }).c).toMatchObject(CONSUMER_DEFAULTS);
  });
});
