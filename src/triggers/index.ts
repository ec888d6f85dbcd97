/**
 * Triggers: a topic bound to a target, delivered by commits instead of a consumer that stays up
 * (docs/triggers.md). `createTriggers` builds the registry, the runner that delivers, and the
 * admin operations the routes call.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { GroupServices } from '../groups/index.js';
import type { Metrics } from '../metrics.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { MetadataStore } from '../storage/ports.js';
import type { TopicRegistry } from '../topics/topics.js';
import { DeliveryLeases } from './delivery-lease.js';
import type { PutFailureObject } from './failure-bucket.js';
import type { SendFailureMessage } from './failure-message.js';
import { TriggerPositions } from './positions.js';
import type { ShareQueue } from './share-delivery.js';
import { targetFactory, type LambdaInvoke, type TargetFactory } from './targets.js';
import { TriggerAdmin } from './trigger-admin.js';
import { TriggerRegistry } from './trigger-registry.js';
import { TriggerRunner } from './trigger-runner.js';

export type { TriggerDefinition } from './trigger.js';
export type { LambdaInvoke } from './targets.js';
export type { PutFailureObject } from './failure-bucket.js';
export type { SendFailureMessage } from './failure-message.js';
export type { TriggerDescription } from './trigger-admin.js';

export interface TriggerServices {
  registry: TriggerRegistry;
  admin: TriggerAdmin;
  runner: TriggerRunner;
}

export interface TriggerOptions {
  /** Kafka's bootstrap servers as the event names them (Lambda's `bootstrapServers`). */
  bootstrapServers: string;
  /** Every target's invoker (tests); otherwise webhooks, and Lambda functions through `lambda`. */
  targets?: TargetFactory;
  lambda?: LambdaInvoke;
  /** Where deliveries report invocations, errors, filtered and failed records, and lag. */
  metrics?: Metrics;
  /** S3 on-failure destinations' writes (src/storage/failure-bucket-writer.ts). */
  putFailureObject?: PutFailureObject;
  /** SQS and SNS on-failure destinations' messages (src/storage/failure-message-sender.ts). */
  sendFailureMessage?: SendFailureMessage;
  /** Whether this process delivers (default true); one that does not never starts a run. */
  deliver?: boolean;
  retryBackoff?: { baseMs: number; maxMs: number };
  onError?: (msg: string, fields: Record<string, unknown>) => void;
}

export function createTriggers(
  deps: {
    metadata: MetadataStore;
    clock: Clock;
    topics: TopicRegistry;
    log: PartitionLog;
    groups: GroupServices;
    /** The share groups UNORDERED triggers read through; without them those triggers do not deliver. */
    share?: ShareQueue;
  },
  options: TriggerOptions,
): TriggerServices {
  const registry = new TriggerRegistry(deps.metadata, deps.clock);
  const leases = new DeliveryLeases(deps.metadata);
  const positions = new TriggerPositions({ groups: deps.groups, log: deps.log, clock: deps.clock });
  const runner = new TriggerRunner(
    {
      registry,
      leases,
      positions,
      topics: deps.topics,
      log: deps.log,
      clock: deps.clock,
      targets: options.targets ?? targetFactory(options.lambda),
      bootstrapServers: options.bootstrapServers,
      processId: randomUUID(),
      retryBackoff: options.retryBackoff ?? { baseMs: 100, maxMs: 10_000 },
      onError: options.onError ?? (() => {}),
      ...(options.putFailureObject && { putFailureObject: options.putFailureObject }),
      ...(options.sendFailureMessage && { sendFailureMessage: options.sendFailureMessage }),
      ...(options.metrics && { metrics: options.metrics }),
    },
    options.deliver ?? true,
    deps.share,
  );
  const admin = new TriggerAdmin({ ...deps, registry, leases, positions, runner });
  return { registry, admin, runner };
}
