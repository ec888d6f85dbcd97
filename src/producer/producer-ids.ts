import { randomUUID } from 'node:crypto';
import { KafkaError } from '../wire/errors.js';
import { optimisticUpdate } from '../storage/optimistic-update.js';
import type { MetadataStore } from '../storage/ports.js';
import { CLUSTER_PK, PRODUCER_ID_SEQ_SK, PRODUCER_META_SK, producerPk } from '../storage/key-layout.js';

/**
 * Producer ids and epochs (Kafka's InitProducerId). Ids come from a counter item; each id has a
 * meta item holding its current epoch. Re-initialising an existing id bumps its epoch, which
 * fences every writer still holding the older one (INVALID_PRODUCER_EPOCH).
 *
 * Each write carries the id of the init call that made it (`by`), so a write that applied but whose
 * answer was lost (the SDK's retry then fails its condition) is recognised as this call's own: the
 * counter does not skip an id, and a re-init is not reported as a concurrent one.
 */
const COUNTER = { pk: CLUSTER_PK, sk: PRODUCER_ID_SEQ_SK };
const metaKey = (id: number) => ({ pk: producerPk(id), sk: PRODUCER_META_SK });
const MAX_EPOCH = 32_767; // Kafka's producer epoch is a signed 16-bit value

export interface ProducerIdAndEpoch {
  producerId: number;
  producerEpoch: number;
}

interface ProducerMeta {
  epoch: number;
  by?: string;
}

export class ProducerIds {
  constructor(private readonly metadata: MetadataStore) {}

  async init(existing?: ProducerIdAndEpoch): Promise<ProducerIdAndEpoch> {
    const by = randomUUID();
    if (existing) {
      const { pk, sk } = metaKey(existing.producerId);
      const bumped = await optimisticUpdate<ProducerMeta, ProducerIdAndEpoch | 'exhausted'>({
        metadata: this.metadata,
        pk,
        sk,
        attempts: 1,
        giveUp: {
          errorName: 'INVALID_PRODUCER_EPOCH',
          message: `Producer ${existing.producerId} was re-initialised concurrently`,
        },
        decide: (item) => {
          if (!item) throw new KafkaError('UNKNOWN_PRODUCER_ID', `Producer id ${existing.producerId} is unknown`);
          if (item.value.epoch !== existing.producerEpoch) {
            throw new KafkaError(
              'INVALID_PRODUCER_EPOCH',
              `Producer ${existing.producerId} has epoch ${item.value.epoch}, not ${existing.producerEpoch}`,
            );
          }
          // Epoch exhausted: a fresh id, as Kafka does.
          if (item.value.epoch >= MAX_EPOCH) return { done: 'exhausted' };
          const epoch = item.value.epoch + 1;
          return { write: { epoch, by }, answer: () => ({ producerId: existing.producerId, producerEpoch: epoch }) };
        },
        recognise: (found) =>
          found?.value.by === by ? { producerId: existing.producerId, producerEpoch: found.value.epoch } : undefined,
      });
      if (bumped.result !== 'exhausted') return bumped.result;
    }
    const producerId = await this.nextId(by);
    const { pk, sk } = metaKey(producerId);
    await optimisticUpdate<ProducerMeta, true>({
      metadata: this.metadata,
      pk,
      sk,
      known: { item: undefined },
      attempts: 1,
      giveUp: { errorName: 'UNKNOWN_SERVER_ERROR', message: `Producer id ${producerId} was handed out twice` },
      decide: () => ({ write: { epoch: 0, by }, answer: () => true as const }),
      recognise: (found) => (found?.value.by === by ? (true as const) : undefined),
    });
    return { producerId, producerEpoch: 0 };
  }

  /** The current epoch of a producer id: writes carrying an older one are fenced. */
  async currentEpoch(producerId: number): Promise<number> {
    const { pk, sk } = metaKey(producerId);
    const item = await this.metadata.get<ProducerMeta>(pk, sk);
    if (!item)
      throw new KafkaError('UNKNOWN_PRODUCER_ID', `Producer id ${producerId} is unknown; call producers:init first`);
    return item.value.epoch;
  }

  private async nextId(by: string): Promise<number> {
    const { result } = await optimisticUpdate<{ next: number; by?: string }, number>({
      metadata: this.metadata,
      pk: COUNTER.pk,
      sk: COUNTER.sk,
      attempts: 64,
      giveUp: { errorName: 'COORDINATOR_NOT_AVAILABLE', message: 'Too many concurrent producer id allocations; retry' },
      decide: (item) => {
        const id = item?.value.next ?? 0;
        return { write: { next: id + 1, by }, answer: () => id };
      },
      recognise: (found) => (found?.value.by === by ? found.value.next - 1 : undefined),
    });
    return result;
  }
}
