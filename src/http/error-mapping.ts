import { ZodError } from 'zod';
import { KafkaError } from '../errors.js';

/** Confluent v3's error envelope plus the Kafka error name. */
export interface ErrorBody {
  error_code: number;
  message: string;
  error: string;
}

/**
 * Maps anything thrown while serving a request to a status and an envelope. Only KafkaErrors and
 * input errors speak to the caller in their own words; anything else is our fault (500) and its
 * details stay in the log, never in the response.
 */
export function toErrorResponse(e: unknown): { status: number; body: ErrorBody } {
  if (e instanceof KafkaError) {
    return { status: e.status, body: { error_code: e.restCode, message: e.message, error: e.errorName } };
  }
  if (e instanceof ZodError) {
    const issue = e.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    return { status: 400, body: { error_code: 40001, message: `Invalid request${where}: ${issue?.message ?? 'bad input'}`, error: 'BAD_REQUEST' } };
  }
  return { status: 500, body: { error_code: 50001, message: 'Internal server error', error: 'UNKNOWN_SERVER_ERROR' } };
}
