import { KafkaError } from '../wire/errors.js';
import { ConditionFailedError, type MetadataStore } from '../storage/ports.js';
import { CLUSTER_PK, PRODUCER_ID_SEQ_SK, PRODUCER_META_SK, producerPk } from '../storage/key-layout.js';

/**
 * Producer ids and epochs (Kafka's InitProducerId). Ids come from a counter item; each id has a
 * meta item holding its current epoch. Re-initialising an existing id bumps its epoch, which
 * fences every writer still holding the older one (INVALID_PRODUCER_EPOCH).
 */
const COUNTER = { pk: CLUSTER_PK, sk: PRODUCER_ID_SEQ_SK };
const metaKey = (id: number) => ({ pk: producerPk(id), sk: PRODUCER_META_SK });
const MAX_EPOCH = 32_767; // Kafka's producer epoch is a signed 16-bit value

export interface ProducerIdAndEpoch {
  producerId: number;
  producerEpoch: number;
}

export class ProducerIds {
  constructor(private readonly metadata: MetadataStore) {}

  async init(existing?: ProducerIdAndEpoch): Promise<ProducerIdAndEpoch> {
    if (existing) {
      const { pk, sk } = metaKey(existing.producerId);
      const item = await this.metadata.get<{ epoch: number }>(pk, sk);
      if (!item) throw new KafkaError('UNKNOWN_PRODUCER_ID', `Producer id ${existing.producerId} is unknown`);
      if (item.value.epoch !== existing.producerEpoch) {
        throw new KafkaError('INVALID_PRODUCER_EPOCH', `Producer ${existing.producerId} has epoch ${item.value.epoch}, not ${existing.producerEpoch}`);
      }
      if (item.value.epoch < MAX_EPOCH) {
        try {
          await this.metadata.put(pk, sk, { epoch: item.value.epoch + 1 }, { ifVersion: item.version });
          return { producerId: existing.producerId, producerEpoch: item.value.epoch + 1 };
        } catch (e) {
          if (e instanceof ConditionFailedError) throw new KafkaError('INVALID_PRODUCER_EPOCH', `Producer ${existing.producerId} was re-initialised concurrently`);
          throw e;
        }
      }
      // Epoch exhausted: a fresh id, as Kafka does.
    }
    const producerId = await this.nextId();
    const { pk, sk } = metaKey(producerId);
    await this.metadata.put(pk, sk, { epoch: 0 }, { ifAbsent: true });
    return { producerId, producerEpoch: 0 };
  }

  /** The current epoch of a producer id: writes carrying an older one are fenced. */
  async currentEpoch(producerId: number): Promise<number> {
    const { pk, sk } = metaKey(producerId);
    const item = await this.metadata.get<{ epoch: number }>(pk, sk);
    if (!item) throw new KafkaError('UNKNOWN_PRODUCER_ID', `Producer id ${producerId} is unknown; call producers:init first`);
    return item.value.epoch;
  }

  private async nextId(): Promise<number> {
    for (;;) {
      const item = await this.metadata.get<{ next: number }>(COUNTER.pk, COUNTER.sk);
      const id = item?.value.next ?? 0;
      try {
        await this.metadata.put(COUNTER.pk, COUNTER.sk, { next: id + 1 }, item ? { ifVersion: item.version } : { ifAbsent: true });
        return id;
      } catch (e) {
        if (!(e instanceof ConditionFailedError)) throw e;
      }
    }
  }
}
