/** A Logger that keeps each line as one event, `{ level, msg, ...fields }`, for a test to look at. */
import { loggerOf, type Logger } from '../../src/metrics.js';

export type LogEvent = Record<string, unknown>;

export function eventLogger(events: LogEvent[] | ((event: LogEvent) => void)): Logger {
  const keep = typeof events === 'function' ? events : (e: LogEvent) => void events.push(e);
  return loggerOf((level, msg, fields) => keep({ level, msg, ...fields }));
}
