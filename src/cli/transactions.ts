/** `transactions list|describe|find-hanging|abort`: what kafka-transactions.sh does. */
import { connect, int, parse, required, UsageError, CONNECTION_HELP } from './args.js';
import type { Context } from './context.js';
import { table } from './format.js';

export const TRANSACTIONS_HELP = `Usage: kafka-log transactions <list|describe|find-hanging|abort> [options]
  list
  describe     --transactional-id ID
  find-hanging [--topic T [--partition P]] [--max-transaction-timeout MINUTES]   (default 15)
               transactions open longer than that which no coordinator will end
  abort        --topic T --partition P (--producer-id ID --producer-epoch E | --start-offset O)
               writes an ABORT marker for a hanging transaction (--start-offset finds the producer)
${CONNECTION_HELP}`;

export async function transactionsCommand(argv: string[], ctx: Context): Promise<void> {
  const [sub, ...rest] = argv;
  const { values } = parse(rest, {
    'transactional-id': { type: 'string' },
    topic: { type: 'string' },
    partition: { type: 'string' },
    'producer-id': { type: 'string' },
    'producer-epoch': { type: 'string' },
    'coordinator-epoch': { type: 'string' },
    'start-offset': { type: 'string' },
    'max-transaction-timeout': { type: 'string' },
  });
  if (values.help || sub === undefined) return ctx.out(TRANSACTIONS_HELP);
  const admin = connect(values, ctx.env).admin({ retries: 2 });
  switch (sub) {
    case 'list': {
      const rows = (await admin.listTransactions()).map((t) => [t.transactionalId, 0, t.producerId, t.state]);
      for (const line of table(['TransactionalId', 'Coordinator', 'ProducerId', 'TransactionState'], rows))
        ctx.out(line);
      return;
    }
    case 'describe': {
      const id = required(values['transactional-id'], '--transactional-id');
      const [t] = await admin.describeTransactions([id]);
      const now = Date.now();
      const row = [
        0,
        t!.transactionalId,
        t!.producerId,
        t!.producerEpoch,
        t!.state,
        t!.transactionTimeoutMs,
        t!.transactionStartTime ?? null,
        t!.transactionStartTime !== undefined ? now - t!.transactionStartTime : null,
        t!.partitions.map((p) => `${p.topic}-${p.partition}`).join(','),
      ];
      for (const line of table(
        [
          'CoordinatorId',
          'TransactionalId',
          'ProducerId',
          'ProducerEpoch',
          'TransactionState',
          'TransactionTimeoutMs',
          'CurrentTransactionStartTimeMs',
          'TransactionDurationMs',
          'TopicPartitions',
        ],
        [row],
      ))
        ctx.out(line);
      return;
    }
    case 'find-hanging': {
      const minutes =
        values['max-transaction-timeout'] === undefined
          ? 15
          : int(values['max-transaction-timeout'], '--max-transaction-timeout');
      const found = await admin.findHangingTransactions({
        ...(values.topic ? { topic: values.topic } : {}),
        olderThanMs: minutes * 60_000,
      });
      const partition = values.partition === undefined ? undefined : int(values.partition, '--partition');
      const now = Date.now();
      const rows = found
        .filter((h) => partition === undefined || h.partition === partition)
        .map((h) => [
          h.topic,
          h.partition,
          h.producerId,
          h.producerEpoch,
          0,
          h.startOffset,
          h.startTime,
          Math.round((now - h.startTime) / 60_000),
          h.transactionalId ?? null,
        ]);
      for (const line of table(
        [
          'Topic',
          'Partition',
          'ProducerId',
          'ProducerEpoch',
          'CoordinatorEpoch',
          'StartOffset',
          'LastTimestamp',
          'Duration(min)',
          'TransactionalId',
        ],
        rows,
      ))
        ctx.out(line);
      return;
    }
    case 'abort': {
      const topic = required(values.topic, '--topic');
      const partition = int(values.partition, '--partition');
      let producerId: number;
      let producerEpoch: number;
      if (values['start-offset'] !== undefined) {
        const start = int(values['start-offset'], '--start-offset');
        const open = (await admin.findHangingTransactions({ topic, olderThanMs: 0 })).find(
          (h) => h.partition === partition && h.startOffset === start,
        );
        if (!open) throw new UsageError(`No open transaction starts at offset ${start} of ${topic}-${partition}`);
        ({ producerId, producerEpoch } = open);
      } else {
        producerId = int(values['producer-id'], '--producer-id');
        producerEpoch = int(values['producer-epoch'], '--producer-epoch');
      }
      const r = await admin.abortTransaction({ topic, partition, producerId, producerEpoch });
      ctx.out(
        r.markerWritten
          ? `Aborted the transaction of producer ${producerId} in ${topic}-${partition}`
          : `Producer ${producerId} has no open transaction in ${topic}-${partition}; nothing written`,
      );
      return;
    }
    default:
      throw new UsageError(`Unknown transactions command ${sub}`);
  }
}
