/**
 * The body of Confluent's batch alter of configs (`configs:alter`), a topic's or a share group's:
 * each entry sets its value (SET, the default) or deletes the override (DELETE).
 */
import * as z from 'zod';
import { KafkaError } from '../wire/errors.js';

export const alterConfigsSchema = z.object({
  data: z.array(
    z.object({
      name: z.string(),
      value: z.string().nullable().optional(),
      operation: z.enum(['SET', 'DELETE']).optional(),
    }),
  ),
  validate_only: z.boolean().optional(),
});

/** The changes asked for, in their order: a value to set, or null to delete. */
export function configChanges(body: z.infer<typeof alterConfigsSchema>): { name: string; value: string | null }[] {
  return body.data.map((d) => {
    if (d.operation === 'DELETE') return { name: d.name, value: null };
    if (d.value === undefined || d.value === null)
      throw new KafkaError('INVALID_CONFIG', `A value is required to SET ${d.name}`);
    return { name: d.name, value: d.value };
  });
}
