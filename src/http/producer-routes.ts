import { Hono } from 'hono';
import * as z from 'zod';
import type { AppEnv } from './app-env.js';
import { readJson } from './request.js';
import { authorizeIdempotentWrite } from './security.js';

export const initSchema = z
  .object({ producer_id: z.number().int().nonnegative(), producer_epoch: z.number().int().nonnegative() })
  .partial()
  .refine(
    (b) => (b.producer_id === undefined) === (b.producer_epoch === undefined),
    'producer_id and producer_epoch go together',
  );

/**
 * Extension: Kafka's InitProducerId for idempotent producers (no REST API has it). Without a body
 * it allocates a new producer id at epoch 0; with the current id and epoch it bumps the epoch,
 * fencing any other writer still holding the old one.
 */
export function producerRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.post('/producers:init', async (c) => {
    await authorizeIdempotentWrite(c);
    const body = initSchema.parse(await readJson(c, { optional: true }));
    const { producerIds, clusterId } = c.get('services');
    const existing =
      body.producer_id !== undefined
        ? { producerId: body.producer_id, producerEpoch: body.producer_epoch! }
        : undefined;
    const { producerId, producerEpoch } = await producerIds.init(existing);
    return c.json({
      kind: 'KafkaProducerId',
      cluster_id: clusterId,
      producer_id: producerId,
      producer_epoch: producerEpoch,
    });
  });
  return app;
}
