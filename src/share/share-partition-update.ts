import { shareGroupPk, sharePartitionSk } from '../storage/key-layout.js';
import { optimisticUpdate, type OptimisticUpdate, type UpdateOutcome } from '../storage/optimistic-update.js';
import type { MetadataStore } from '../storage/ports.js';
import { recall, type SharePartitionState } from './share-partition.js';

/** What differs between the writers of a share-partition item: the rest is the same for all. */
export type SharePartitionUpdate<R> = Pick<
  OptimisticUpdate<SharePartitionState, R>,
  'decide' | 'recognise' | 'known' | 'attempts'
>;

/**
 * One change to a share-partition item (share-partition.ts): one conditional write through the
 * optimistic-update helper, given up as COORDINATOR_NOT_AVAILABLE (Kafka's "try again") when
 * others keep winning the race for it.
 */
export function updateSharePartition<R>(
  metadata: MetadataStore,
  group: string,
  topic: string,
  partition: number,
  update: SharePartitionUpdate<R>,
): Promise<UpdateOutcome<SharePartitionState, R>> {
  return optimisticUpdate<SharePartitionState, R>({
    metadata,
    pk: shareGroupPk(group),
    sk: sharePartitionSk(topic, partition),
    giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: `Share-partition ${topic}-${partition} is contended` },
    ...update,
  });
}

/**
 * Recognition by a write's token (`remember`): a write sent more than once whose token the item
 * found carries applied, and is answered `answer`.
 */
export const recognisedBy =
  <R>(token: string, answer: R) =>
  (found: { value: SharePartitionState } | undefined, _attempted: unknown, retried: boolean): R | undefined =>
    retried && found && recall(found.value, token) ? answer : undefined;
