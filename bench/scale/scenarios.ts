import { groupHeartbeats } from './group-heartbeats.js';
import { hotTopic } from './hot-topic.js';
import { idempotentProducers } from './idempotent-producers.js';
import { largeTransaction } from './large-transaction.js';
import { maintenanceRound } from './maintenance-round.js';
import type { Scenario } from './scenario.js';

/**
 * The scale simulation's scenarios (issue 35), by name: `npm run bench:scale -- --scenario NAME`.
 * A scenario is a module of its own; add one here to have it run with the others.
 */
export const SCENARIOS: Scenario[] = [
  maintenanceRound(1),
  maintenanceRound(2),
  groupHeartbeats,
  hotTopic,
  idempotentProducers,
  largeTransaction,
];
