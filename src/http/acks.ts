import type { Context } from 'hono';
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';
import type { Acks } from '../wire/protocol.js';

/** Kafka's acks as the query parameter spells them; all (-1) is the default, as in Kafka 3. */
const ACKS_VALUES = ['0', '1', 'all', '-1'] as const;

/**
 * The produce routes' acks query (extension): the schema the routes parse it with is the one their
 * OpenAPI operations list (record-openapi.ts), so the document and the parser cannot disagree.
 */
export const acksQuerySchema = z.object({
  acks: z.enum(ACKS_VALUES).default('all').meta({
    description:
      "Kafka's acks (extension): 0 answers before anything is durable (offset -1); 1 once the leader store has it; all once every in-sync replica store has it",
  }),
});

/**
 * The request's acks. A value outside the schema is Kafka's INVALID_REQUIRED_ACKS (400), as a
 * Produce with such acks is, rather than the generic BAD_REQUEST of other query parameters.
 */
export function parseAcks(c: Context): Acks {
  const raw = c.req.query('acks');
  const parsed = acksQuerySchema.shape.acks.safeParse(raw);
  if (!parsed.success)
    throw new KafkaError('INVALID_REQUIRED_ACKS', `acks must be 0, 1, all or -1 (got ${JSON.stringify(raw)})`);
  const acks = parsed.data;
  return acks === 'all' || acks === '-1' ? 'all' : acks === '0' ? 0 : 1;
}
