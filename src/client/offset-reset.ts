/**
 * --reset-offsets of kafka-consumer-groups.sh and kafka-share-groups.sh: the strategies, the
 * partitions they apply to, and the body of the server's `offsets:reset` that both group kinds take.
 */

/** kafka-consumer-groups.sh --reset-offsets strategies. */
export type ResetStrategy =
  | { toEarliest: true }
  | { toLatest: true }
  | { toCurrent: true }
  | { toOffset: number }
  | { shiftBy: number }
  /** ms since the epoch, or the tools' 'YYYY-MM-DDTHH:mm:SS.sss' (UTC unless zoned). */
  | { toDatetime: number | string }
  /** ISO-8601 duration, e.g. PT1H (now minus it). */
  | { byDuration: string };

/**
 * kafka-share-groups.sh's: a consumer group's less to-current and shift-by, which move from a
 * committed position a share group does not have.
 */
export type ShareResetStrategy = Exclude<ResetStrategy, { toCurrent: true } | { shiftBy: number }>;

/** --all-topics (every partition the group has offsets or state for), or --topic t[:p,p...]. */
export type ResetScope = { allTopics: true } | { topics: { topic: string; partitions?: number[] }[] };

/** The `offsets:reset` body: the strategy, the scope and whether to only plan (the tools' default). */
export function resetBody(strategy: ResetStrategy, scope: ResetScope, dryRun = true): Record<string, unknown> {
  const where =
    'allTopics' in scope
      ? { all_topics: true }
      : {
          topics: scope.topics.map((t) => ({
            topic_name: t.topic,
            ...(t.partitions ? { partition_ids: t.partitions } : {}),
          })),
        };
  return { ...strategyBody(strategy), ...where, dry_run: dryRun };
}

function strategyBody(s: ResetStrategy): Record<string, unknown> {
  if ('toEarliest' in s) return { strategy: 'to-earliest' };
  if ('toLatest' in s) return { strategy: 'to-latest' };
  if ('toCurrent' in s) return { strategy: 'to-current' };
  if ('toOffset' in s) return { strategy: 'to-offset', offset: s.toOffset };
  if ('shiftBy' in s) return { strategy: 'shift-by', shift_by: s.shiftBy };
  if ('toDatetime' in s) return { strategy: 'to-datetime', datetime: s.toDatetime };
  return { strategy: 'by-duration', duration: s.byDuration };
}
