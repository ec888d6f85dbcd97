import { KafkaError } from '../wire/errors.js';
import type { Acks } from '../wire/protocol.js';

/** Kafka's acks as a query parameter (extension): 0, 1, all or -1; all is the default, as in Kafka 3. */
export function parseAcks(raw: string | undefined): Acks {
  if (raw === undefined || raw === 'all' || raw === '-1') return 'all';
  if (raw === '0') return 0;
  if (raw === '1') return 1;
  throw new KafkaError('INVALID_REQUIRED_ACKS', `acks must be 0, 1, all or -1 (got ${JSON.stringify(raw)})`);
}
