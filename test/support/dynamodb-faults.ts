/**
 * "Applied, answer lost, SDK retried", made deterministic on a real DynamoDBClient: a middleware
 * below the SDK's retry middleware lets a chosen request reach the emulator (so it takes effect),
 * then throws a connection reset instead of handing back the answer. The SDK's retry strategy sees
 * a transient error and sends the same request again, exactly as it does on AWS when a load
 * balancer resets a connection after DynamoDB applied the write. The adapter is the real one.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export interface DroppedAnswer {
  /** e.g. 'UpdateItemCommand', 'DeleteItemCommand'. */
  command: string;
  /** Which request: its key (pk, sk); all of that command when absent. */
  match?: (key: { pk: string; sk: string }, input: Record<string, unknown>) => boolean;
  /** How many answers to drop (default 1). */
  times?: number;
}

export interface AnswerDropper {
  /** Drops the next answer(s) matching. */
  drop(rule: DroppedAnswer): void;
  /** Answers dropped so far. */
  readonly dropped: number;
  /** Requests of each command that reached the emulator (retries included). */
  readonly sent: Record<string, number>;
  remove(): void;
}

const NAME = 'testDropAnswers';

export function installAnswerDropper(client: DynamoDBClient): AnswerDropper {
  const rules: (DroppedAnswer & { left: number })[] = [];
  const sent: Record<string, number> = {};
  let dropped = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = (context as { commandName?: string }).commandName ?? '';
      const input = (args as unknown as { input?: Record<string, unknown> }).input ?? {};
      const k = input.Key as { pk?: { S?: string }; sk?: { S?: string } } | undefined;
      const key = { pk: k?.pk?.S ?? '', sk: k?.sk?.S ?? '' };
      const rule = rules.find((r) => r.left > 0 && r.command === command && (!r.match || r.match(key, input)));
      if (rule) rule.left--;
      sent[command] = (sent[command] ?? 0) + 1;
      const result = await next(args);
      if (rule) {
        dropped++;
        throw Object.assign(
          new Error(`injected: ${command} ${key.pk}/${key.sk} applied, connection reset before the answer`),
          { code: 'ECONNRESET' },
        );
      }
      return result;
    },
    { step: 'deserialize', name: NAME, priority: 'high' },
  );
  return {
    drop(rule) {
      rules.push({ ...rule, left: rule.times ?? 1 });
    },
    get dropped() {
      return dropped;
    },
    sent,
    remove() {
      client.middlewareStack.remove(NAME);
    },
  };
}
