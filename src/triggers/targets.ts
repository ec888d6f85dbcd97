/**
 * The port a delivery invokes its target through, and the webhook target. A Lambda function target
 * lives in a storage adapter (it needs the AWS SDK) and is handed in by the composition root.
 */
import type { KafkaEvent } from './kafka-event.js';
import type { TriggerTarget, WebhookTarget } from './trigger.js';

/** What an invocation came to: the function's answer (parsed JSON, if any), or why it failed. */
export type InvokeOutcome = { ok: true; response: unknown } | { ok: false; error: string };

export type Invoke = (event: KafkaEvent) => Promise<InvokeOutcome>;

/** Builds the invoker of a target. */
export type TargetFactory = (target: TriggerTarget) => Invoke;

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

/** The targets every backend has. */
export const defaultTargets: TargetFactory = (target) => webhookTarget(target);
