/**
 * The transaction coordinator's limits and Kafka's defaults for them, apart from the coordinator so
 * that a function that composes no coordinator (fetch) can still answer them as broker configs.
 */
export interface TransactionConfig {
  /** Kafka's transaction.max.timeout.ms: the largest transaction.timeout.ms a producer may ask for. */
  maxTimeoutMs: number;
  /** Kafka's transactional.id.expiration.ms: an id idle this long (no transaction) is removed. */
  idExpirationMs: number;
}

export const DEFAULT_TRANSACTION_CONFIG: TransactionConfig = { maxTimeoutMs: 900_000, idExpirationMs: 604_800_000 };
/** The producer's transaction.timeout.ms default (Kafka's). */
export const DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000;
