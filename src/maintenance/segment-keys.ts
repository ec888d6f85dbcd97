import { randomBytes } from 'node:crypto';

/**
 * Object key layout. Request objects are `data/{topicId}/{13-digit ms}-{hex}` (written by
 * produce); maintenance writes per-partition segments named by base offset, as Kafka names
 * segment files: `segments/{topicId}/{partition}/{baseOffset, 20 digits}-{13-digit ms}-{hex}`.
 * Both carry their creation time on the writer's clock, which the orphan sweep and the
 * stability rule read (S3's LastModified is the store's clock, not ours).
 */
export const dataPrefix = (topicId: string) => `data/${topicId}/`;
export const segmentPrefix = (topicId: string) => `segments/${topicId}/`;

export function newSegmentKey(topicId: string, partition: number, baseOffset: number, now: number): string {
  return `${segmentPrefix(topicId)}${partition}/${String(baseOffset).padStart(20, '0')}-${String(now).padStart(13, '0')}-${randomBytes(6).toString('hex')}`;
}

const DATA_KEY = /^data\/[^/]+\/(\d{13})-[0-9a-f]+$/;
const SEGMENT_KEY = /^segments\/[^/]+\/\d+\/\d{20}-(\d{13})-[0-9a-f]+$/;

/**
 * When the object was written, for the stability rule: a request object's time, or -Infinity for
 * a segment (its content was stable, hence old, when it was written). Undefined for other keys.
 */
export function objectCreatedAt(key: string): number | undefined {
  const data = DATA_KEY.exec(key);
  if (data) return Number(data[1]);
  if (SEGMENT_KEY.test(key)) return -Infinity;
  return undefined;
}

/** When the object was written (request objects and segments alike), for the orphan sweep. */
export function objectWrittenAt(key: string): number | undefined {
  const m = DATA_KEY.exec(key) ?? SEGMENT_KEY.exec(key);
  return m ? Number(m[1]) : undefined;
}

export const isSegmentKey = (key: string) => SEGMENT_KEY.test(key);
