/**
 * The admin client's transaction operations (Java Admin's listTransactions, describeTransactions,
 * abortTransaction, and kafka-transactions.sh find-hanging), over the server's transaction API.
 */
import { GroupAdmin } from './group-admin.js';
import { enc } from './transport.js';
import { allPages, type Page } from './pages.js';

export interface TransactionDescription {
  transactionalId: string;
  producerId: number;
  producerEpoch: number;
  state: string;
  transactionTimeoutMs: number;
  /** Epoch ms, or undefined when no transaction is open. */
  transactionStartTime: number | undefined;
  partitions: { topic: string; partition: number }[];
  groups: string[];
}

export interface HangingTransaction {
  topic: string;
  partition: number;
  producerId: number;
  producerEpoch: number;
  startOffset: number;
  startTime: number;
  transactionalId: string | undefined;
  coordinatorState: string | undefined;
}

interface WireTransaction {
  transactional_id: string;
  producer_id: number;
  producer_epoch: number;
  state: string;
  transaction_timeout_ms: number;
  transaction_start_time: string | null;
  partitions: { topic_name: string; partition_id: number }[];
  groups: string[];
}

const description = (t: WireTransaction): TransactionDescription => ({
  transactionalId: t.transactional_id,
  producerId: t.producer_id,
  producerEpoch: t.producer_epoch,
  state: t.state,
  transactionTimeoutMs: t.transaction_timeout_ms,
  transactionStartTime: t.transaction_start_time ? Date.parse(t.transaction_start_time) : undefined,
  partitions: t.partitions.map((p) => ({ topic: p.topic_name, partition: p.partition_id })),
  groups: t.groups,
});

export class TransactionAdmin extends GroupAdmin {
  async listTransactions(
    filter: { states?: string[]; producerIds?: number[] } = {},
  ): Promise<TransactionDescription[]> {
    const query = new URLSearchParams();
    for (const s of filter.states ?? []) query.append('state', s);
    for (const p of filter.producerIds ?? []) query.append('producer_id', String(p));
    const qs = query.size > 0 ? `?${query}` : '';
    const res = await this.call(() => this.transport.request<{ data: WireTransaction[] }>('GET', `/transactions${qs}`));
    return res.body.data
      .map(description)
      .sort((a, b) => (a.transactionalId < b.transactionalId ? -1 : a.transactionalId > b.transactionalId ? 1 : 0));
  }

  async describeTransactions(transactionalIds: string[]): Promise<TransactionDescription[]> {
    return Promise.all(
      transactionalIds.map(async (id) =>
        description(
          (await this.call(() => this.transport.request<WireTransaction>('GET', `/transactions/${enc(id)}`))).body,
        ),
      ),
    );
  }

  /** Transactions open in partitions longer than `olderThanMs` that no coordinator will end (default transaction.max.timeout.ms). */
  async findHangingTransactions(options: { topic?: string; olderThanMs?: number } = {}): Promise<HangingTransaction[]> {
    const query = new URLSearchParams();
    if (options.topic) query.set('topic', options.topic);
    if (options.olderThanMs !== undefined) query.set('older_than_ms', String(options.olderThanMs));
    const qs = query.size > 0 ? `?${query}` : '';
    type Wire = {
      topic_name: string;
      partition_id: number;
      producer_id: number;
      producer_epoch: number;
      start_offset: number;
      start_time: string;
      transactional_id: string | null;
      coordinator_state: string | null;
    };
    // The server reads a page of partitions per request; metadata.next goes on.
    const found = await allPages<Wire>(`/transactions:hanging${qs}`, async (at) => {
      const res = await this.call(() => this.transport.request<Page<Wire>>('GET', at));
      return res.body;
    });
    return found.map((h) => ({
      topic: h.topic_name,
      partition: h.partition_id,
      producerId: h.producer_id,
      producerEpoch: h.producer_epoch,
      startOffset: h.start_offset,
      startTime: Date.parse(h.start_time),
      transactionalId: h.transactional_id ?? undefined,
      coordinatorState: h.coordinator_state ?? undefined,
    }));
  }

  /** Writes an ABORT marker for the producer's open transaction in one partition (a hanging one). */
  async abortTransaction(spec: {
    topic: string;
    partition: number;
    producerId: number;
    producerEpoch: number;
  }): Promise<{ markerWritten: boolean }> {
    const res = await this.call(() =>
      this.transport.request<{ marker_written: boolean }>(
        'POST',
        `/topics/${enc(spec.topic)}/partitions/${spec.partition}/transactions:abort`,
        {
          body: { producer_id: spec.producerId, producer_epoch: spec.producerEpoch },
          topic: spec.topic,
          partition: spec.partition,
        },
      ),
    );
    return { markerWritten: res.body.marker_written };
  }
}
