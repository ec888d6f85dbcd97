/**
 * A transaction of a transactional producer, shaped like kafkajs's (`const t = await
 * producer.transaction(); await t.send(...); await t.sendOffsets(...); await t.commit()`), over
 * the server's transaction API (Java's TransactionManager, reduced to what HTTP needs): partitions
 * join the transaction with their first produce (the server adds them), `sendOffsets` is
 * AddOffsetsToTxn and TxnOffsetCommit in one request, and commit/abort wait for every send first.
 *
 * Every request here may be retried: the server decides each one from the transaction's state, so
 * a commit whose answer was lost is answered again as committed. A fenced producer (another one
 * took over the transactional id) fails with PRODUCER_FENCED for good.
 */
import { KafkaClientError } from '../errors.js';
import { retry } from '../retry.js';
import { enc, type Transport } from '../transport.js';
import type { Message } from '../codec.js';
import type { RecordMetadata } from './record-accumulator.js';
import type { ProducerIdAndEpoch } from './transaction-manager.js';

export interface ProducerRecordBatch {
  topic: string;
  messages: Message[];
}

export interface TransactionOffsets {
  consumerGroupId: string;
  /**
   * The consumer whose positions these are (Java's groupMetadata()): its member id and generation
   * are checked by the group (KIP-447), so a consumer that lost its partitions cannot commit them.
   */
  consumer?: { groupMetadata(): { memberId: string; generationId: number } };
  topics: { topic: string; partitions: { partition: number; offset: string | number; metadata?: string }[] }[];
}

/** What a transaction needs of its producer. */
export interface TransactionHost {
  readonly transport: Transport;
  readonly transactionalId: string;
  identity(): ProducerIdAndEpoch;
  send(record: ProducerRecordBatch): Promise<RecordMetadata[]>;
  flush(): Promise<void>;
  fence(e: KafkaClientError): void;
  ended(): void;
  retryOptions(): { retries: number; initialBackoffMs: number; maxBackoffMs: number; deadline: number };
}

const FENCED = new Set(['PRODUCER_FENCED', 'INVALID_PRODUCER_EPOCH']);

export class Transaction {
  private state: 'open' | 'committing' | 'aborting' | 'done' = 'open';
  /** Whether anything may have joined the server's transaction (a send attempted, offsets sent). */
  private touched = false;
  private failed: unknown;

  constructor(private readonly host: TransactionHost) {}

  isActive(): boolean {
    return this.state === 'open';
  }

  send(record: ProducerRecordBatch): Promise<RecordMetadata[]> {
    this.assertOpen();
    this.touched = true;
    return this.host.send(record).catch((e: unknown) => {
      this.failed ??= e;
      throw e;
    });
  }

  async sendBatch(batch: { topicMessages: ProducerRecordBatch[] }): Promise<RecordMetadata[]> {
    return (await Promise.all(batch.topicMessages.map((t) => this.send(t)))).flat();
  }

  /** The consumer's offsets, committed to its group if and when the transaction commits. */
  async sendOffsets(offsets: TransactionOffsets): Promise<void> {
    this.assertOpen();
    this.touched = true;
    const member = offsets.consumer?.groupMetadata();
    const body = {
      group_id: offsets.consumerGroupId,
      ...(member && member.memberId !== '' ? { member_id: member.memberId, generation_id: member.generationId } : {}),
      offsets: offsets.topics.flatMap((t) =>
        t.partitions.map((p) => ({
          topic_name: t.topic,
          partition_id: p.partition,
          offset: Number(p.offset),
          ...(p.metadata !== undefined ? { metadata: p.metadata } : {}),
        })),
      ),
    };
    await this.request('offsets', body).catch((e: unknown) => {
      this.failed ??= e;
      throw e;
    });
  }

  /** Waits for every send, then commits; a failed send makes the transaction abort-only. */
  async commit(): Promise<void> {
    this.assertOpen();
    this.state = 'committing';
    try {
      await this.host.flush().catch((e: unknown) => (this.failed ??= e));
      // A fenced producer stays fenced: commit reports that, as Kafka's commitTransaction does.
      if (this.failed instanceof KafkaClientError && this.failed.type === 'PRODUCER_FENCED') throw this.failed;
      if (this.failed) {
        throw new KafkaClientError(
          'ILLEGAL_STATE',
          `The transaction cannot commit: a send failed (${String((this.failed as Error).message ?? this.failed)}); abort it`,
          { cause: this.failed },
        );
      }
      if (this.touched) await this.request('commit', {});
      this.state = 'done';
      this.host.ended();
    } catch (e) {
      if (this.state !== 'done') this.state = 'open';
      throw e;
    }
  }

  async abort(): Promise<void> {
    if (this.state === 'done') throw new KafkaClientError('ILLEGAL_STATE', 'The transaction is over');
    this.state = 'aborting';
    try {
      await this.host.flush().catch(() => {});
      if (this.touched) await this.request('abort', {});
      this.state = 'done';
      this.host.ended();
    } catch (e) {
      this.state = 'open';
      throw e;
    }
  }

  private async request(action: 'offsets' | 'commit' | 'abort', body: Record<string, unknown>): Promise<void> {
    const id = this.host.identity();
    try {
      await retry(
        () =>
          this.host.transport.request('POST', `/transactions/${enc(this.host.transactionalId)}/${action}`, {
            body: { ...body, producer_id: id.producerId, producer_epoch: id.producerEpoch },
          }),
        this.host.retryOptions(),
      );
    } catch (e) {
      if (e instanceof KafkaClientError && FENCED.has(e.type)) {
        const fenced = new KafkaClientError(
          'PRODUCER_FENCED',
          `The producer was fenced: another producer took over transactional id ${this.host.transactionalId} (${e.message})`,
          { cause: e },
        );
        this.host.fence(fenced);
        throw fenced;
      }
      throw e;
    }
  }

  private assertOpen(): void {
    if (this.state !== 'open')
      throw new KafkaClientError('ILLEGAL_STATE', `The transaction is ${this.state === 'done' ? 'over' : this.state}`);
  }
}
