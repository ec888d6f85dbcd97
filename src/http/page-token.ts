/**
 * Paged partition lists (src/topics/partition-scan.ts) over HTTP: v3's `metadata.next` is the
 * request's own URL with a `page_token` naming the last partition the page holds, opaque to callers.
 */
import type { Context } from 'hono';
import * as z from 'zod';
import type { PartitionCursor } from '../topics/partition-scan.js';
import { KafkaError } from '../wire/errors.js';

const encode = (c: PartitionCursor) => Buffer.from(JSON.stringify([c.topic, c.partition])).toString('base64url');

/** The `page_token` query parameter, as the document describes it (pageCursor reads it). */
export const pageTokenSchema = z
  .string()
  .meta({
    description: 'Where the previous page stopped (its metadata.next): each page reads at most 1,000 partitions',
  })
  .optional();

/** The cursor of the request's `page_token`, if it has one. */
export function pageCursor(c: Context): PartitionCursor | undefined {
  const token = c.req.query('page_token');
  if (!token) return undefined;
  try {
    const [topic, partition] = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown[];
    if (typeof topic === 'string' && Number.isInteger(partition)) return { topic, partition: partition as number };
  } catch {}
  throw new KafkaError('INVALID_REQUEST', 'page_token is not one this server gave');
}

/** `metadata.next` for a page that stopped at `next`: null on the last page. */
export function nextPageUrl(c: Context, next: PartitionCursor | undefined): string | null {
  if (!next) return null;
  const url = new URL(c.req.url);
  url.searchParams.set('page_token', encode(next));
  return url.toString();
}
