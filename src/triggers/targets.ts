/**
 * The port a delivery invokes its target through, and the webhook target. A Lambda function target
 * goes through `LambdaInvoke`, a storage adapter's (it needs the AWS SDK), handed in by the
 * composition root.
 */
import type { KafkaEvent } from './kafka-event.js';
import type { LambdaTarget, TriggerTarget, WebhookTarget } from './trigger.js';

/** What an invocation came to: the function's answer (parsed JSON, if any), or why it failed. */
export type InvokeOutcome = { ok: true; response: unknown } | { ok: false; error: string };

export type Invoke = (event: KafkaEvent) => Promise<InvokeOutcome>;

/** Builds the invoker of a target. */
export type TargetFactory = (target: TriggerTarget) => Invoke;

/**
 * Lambda's Invoke, RequestResponse (src/storage/lambda-invoker.ts): the function's answer, or a
 * failure for a FunctionError (Handled or Unhandled), a service error or the timeout passing.
 */
export type LambdaInvoke = (functionArn: string, timeoutMs: number, event: KafkaEvent) => Promise<InvokeOutcome>;

/**
 * POSTs the event as JSON; a 2xx answer is a success (its body, when JSON, is the function's
 * response, as a partial batch response), anything else, a timeout or a refused connection a
 * function error.
 */
export function webhookTarget(target: WebhookTarget): Invoke {
  return async (event) => {
    try {
      const res = await fetch(target.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(event),
        signal: AbortSignal.timeout(target.timeoutMs),
      });
      const text = await res.text();
      if (!res.ok) return { ok: false, error: `HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}` };
      return { ok: true, response: parseJson(text) };
    } catch (e) {
      return { ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
    }
  };
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function lambdaTarget(target: LambdaTarget, invoke: LambdaInvoke): Invoke {
  return (event) => invoke(target.functionArn, target.timeoutMs, event);
}

/** Webhooks, and Lambda functions through `lambda` when the process has it. */
export function targetFactory(lambda?: LambdaInvoke): TargetFactory {
  return (target) => {
    if (target.type === 'WEBHOOK') return webhookTarget(target);
    if (lambda) return lambdaTarget(target, lambda);
    return async () => ({ ok: false, error: 'Lambda targets are not composed in this process' });
  };
}
