import type { Context } from 'hono';
import { KafkaError } from '../errors.js';

/** Parses a JSON body; malformed JSON is the caller's fault (400), never a 500. */
export async function readJson(c: Context, options: { optional?: boolean } = {}): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === '' && options.optional) return {};
  if (text.trim() === '') throw new KafkaError('BAD_REQUEST', 'The request body is empty; a JSON body is required');
  try {
    return JSON.parse(text);
  } catch {
    throw new KafkaError('BAD_REQUEST', 'The request body is not valid JSON');
  }
}

const nonNegativeInt = (raw: string | undefined, what: string): number | undefined => {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new KafkaError('BAD_REQUEST', `${what} must be a non-negative integer`);
  return Number(raw);
};

export const partitionParam = (raw: string): number => nonNegativeInt(raw, 'partition_id')!;
export const queryInt = nonNegativeInt;
