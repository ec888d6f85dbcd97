/**
 * The port a delivery invokes its target through, and the webhook target. A Lambda function target
 * goes through `LambdaInvoke`, a storage adapter's (it needs the AWS SDK), handed in by the
 * composition root.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { LambdaTarget, TriggerTarget, WebhookTarget } from './trigger.js';

/**
 * How the target answered, as Lambda's on-failure records carry it (`responseContext`): the Invoke
 * API's (or the webhook's HTTP) status, the version that ran, and Lambda's `FunctionError`
 * (Handled or Unhandled; a webhook's non-2xx answer is Unhandled).
 */
export interface InvokeAnswer {
  statusCode: number;
  executedVersion?: string;
  functionError?: string;
}

/**
 * What an invocation came to: the function's answer (parsed JSON, if any), or why it failed; with
 * how the target answered, when it did (not for a timeout or a refused connection).
 */
export type InvokeOutcome =
  | { ok: true; response: unknown; answer?: InvokeAnswer }
  | { ok: false; error: string; answer?: InvokeAnswer };

/** Invokes the target with an event (kafka-event.ts), given as its JSON text. */
export type Invoke = (eventJson: Uint8Array) => Promise<InvokeOutcome>;

/** Builds the invoker of a target. */
export type TargetFactory = (target: TriggerTarget) => Invoke;

/**
 * Lambda's Invoke, RequestResponse (src/storage/lambda-invoker.ts): the function's answer, or a
 * failure for a FunctionError (Handled or Unhandled), a service error or the timeout passing.
 */
export type LambdaInvoke = (functionArn: string, timeoutMs: number, eventJson: Uint8Array) => Promise<InvokeOutcome>;

/**
 * POSTs the event as JSON; a 2xx answer is a success (its body, when JSON, is the function's
 * response, as a partial batch response), anything else, a timeout or a refused connection a
 * function error. node:http with kept-alive connections rather than fetch: an event is up to 6 MB,
 * and fetch's body streams copy it several times over.
 */
export function webhookTarget(target: WebhookTarget): Invoke {
  const url = new URL(target.url);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const agent = url.protocol === 'https:' ? httpsAgent : httpAgent;
  return (eventJson) =>
    new Promise<InvokeOutcome>((resolve) => {
      // A plain timer rather than AbortSignal.timeout: a signal and its listeners per request cost
      // more than the rest of the request's setup.
      const timer = setTimeout(() => req.destroy(new WebhookTimeout(target.timeoutMs)), target.timeoutMs);
      timer.unref();
      const settle = (outcome: InvokeOutcome) => {
        clearTimeout(timer);
        resolve(outcome);
      };
      const failed = (e: unknown) =>
        settle({ ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
      const req = send(
        url,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': eventJson.byteLength },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', failed);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status < 200 || status > 299)
              return settle({
                ok: false,
                error: `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`,
                answer: { statusCode: status, functionError: 'Unhandled' },
              });
            settle({ ok: true, response: parseJson(text), answer: { statusCode: status } });
          });
        },
      );
      req.on('error', failed);
      req.end(eventJson);
    });
}

class WebhookTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'TimeoutError';
  }
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
  return (eventJson) => invoke(target.functionArn, target.timeoutMs, eventJson);
}

/** Connections to webhooks, kept alive between invocations (one per delivery in flight). */
const httpAgent = new HttpAgent({ keepAlive: true });
const httpsAgent = new HttpsAgent({ keepAlive: true });

/** Webhooks, and Lambda functions through `lambda` when the process has it. */
export function targetFactory(lambda?: LambdaInvoke): TargetFactory {
  return (target) => {
    if (target.type === 'WEBHOOK') return webhookTarget(target);
    if (lambda) return lambdaTarget(target, lambda);
    return async () => ({ ok: false, error: 'Lambda targets are not composed in this process' });
  };
}
