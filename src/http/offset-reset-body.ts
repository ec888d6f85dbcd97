/**
 * The `offsets:reset` body both group kinds take (kafka-consumer-groups.sh and kafka-share-groups.sh
 * --reset-offsets): its strategies, one schema per group kind from one list, and its reading into
 * the groups' strategy and scope. A share group takes the consumer group's strategies less
 * to-current and shift-by, which move from a committed position it does not have.
 */
import * as z from 'zod';
import { parseIsoDuration } from '../clock.js';
import type { ResetScope, ResetStrategy } from '../groups/offset-reset.js';
import { KafkaError } from '../wire/errors.js';

/** Every strategy, as the body names it (the tools' --to-earliest, ..., --by-duration). */
export const RESET_STRATEGIES = [
  'to-earliest',
  'to-latest',
  'to-current',
  'to-offset',
  'shift-by',
  'to-datetime',
  'by-duration',
] as const;
type StrategyName = (typeof RESET_STRATEGIES)[number];

/** What a reset body says of its strategy. */
interface StrategyFields<K extends StrategyName> {
  strategy: K;
  offset?: number | undefined;
  shift_by?: number | undefined;
  datetime?: string | number | undefined;
  duration?: string | undefined;
}

/** What a reset body says of the partitions it moves: exactly one of the two. */
interface ScopeFields {
  all_topics?: boolean | undefined;
  topics?: { topic_name: string; partition_ids?: number[] | undefined }[] | undefined;
}

/** The tools' --to-datetime format, 'YYYY-MM-DDTHH:mm:SS.sss' with an optional zone (UTC without), or epoch ms. */
function parseDatetime(v: string | number): number {
  if (typeof v === 'number') return v;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?)(Z|[+-]\d{2}:?\d{2})?$/i.exec(v.trim());
  const ms = m
    ? Date.parse(m[1]! + (m[2] ? (m[2].length === 5 ? `${m[2].slice(0, 3)}:${m[2].slice(3)}` : m[2]) : 'Z'))
    : NaN;
  if (Number.isNaN(ms))
    throw new KafkaError(
      'BAD_REQUEST',
      `Invalid datetime ${JSON.stringify(v)}: use YYYY-MM-DDTHH:mm:SS.sss with an optional zone, or epoch milliseconds`,
    );
  return ms;
}

/** The tools' --by-duration, PnDTnHnMn.nS (now minus it), in ms. */
function parseDuration(text: string): number {
  const ms = parseIsoDuration(text.trim());
  if (ms === undefined)
    throw new KafkaError(
      'BAD_REQUEST',
      `Invalid duration ${JSON.stringify(text)}: use the ISO-8601 form PnDTnHnMn.nS, e.g. PT10M or P1DT2H`,
    );
  return ms;
}

/** The body's strategy, of the kinds its schema allows; BAD_REQUEST when a strategy's field is missing or bad. */
export function resetStrategy<K extends StrategyName>(body: StrategyFields<K>): Extract<ResetStrategy, { kind: K }> {
  const need = <T>(v: T | undefined, field: string): T => {
    if (v === undefined) throw new KafkaError('BAD_REQUEST', `strategy ${body.strategy} needs ${field}`);
    return v;
  };
  const strategy = (): ResetStrategy => {
    switch (body.strategy) {
      case 'to-earliest':
      case 'to-latest':
      case 'to-current':
        return { kind: body.strategy };
      case 'to-offset':
        return { kind: 'to-offset', offset: need(body.offset, 'offset') };
      case 'shift-by':
        return { kind: 'shift-by', shiftBy: need(body.shift_by, 'shift_by') };
      case 'to-datetime':
        return { kind: 'to-datetime', timestamp: parseDatetime(need(body.datetime, 'datetime')) };
      case 'by-duration':
        return { kind: 'by-duration', durationMs: parseDuration(need(body.duration, 'duration')) };
    }
    throw new KafkaError('BAD_REQUEST', `Unknown strategy ${JSON.stringify(body.strategy)}`);
  };
  // The kind is the body's own strategy, which K names.
  return strategy() as Extract<ResetStrategy, { kind: K }>;
}

/** The body's scope: all_topics: true or topics, not both, not neither (BAD_REQUEST). */
export function resetScope(body: ScopeFields): ResetScope {
  if ((body.all_topics === true) === (body.topics !== undefined))
    throw new KafkaError('BAD_REQUEST', 'Give exactly one of all_topics: true or topics');
  return body.topics
    ? {
        topics: body.topics.map((t) => ({
          topic: t.topic_name,
          ...(t.partition_ids ? { partitions: t.partition_ids } : {}),
        })),
      }
    : { allTopics: true };
}

/** The fields both kinds' schemas share; each adds its strategies, scope and offset fields. */
export const resetFields = {
  datetime: z
    .union([z.string(), z.int()])
    .meta({ description: "to-datetime: 'YYYY-MM-DDTHH:mm:SS.sss' (UTC without a zone) or epoch ms" })
    .optional(),
  duration: z.string().meta({ description: 'by-duration: PnDTnHnMn.nS' }).optional(),
  dry_run: z.boolean().default(false),
};
