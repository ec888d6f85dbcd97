/**
 * A trigger's Lambda function target on AWS: Lambda's Invoke (RequestResponse) with the Kafka event
 * as payload. One SDK client per region per process, created on first use; the region is the
 * function ARN's unless `region` says otherwise (a trigger may name a function in another region).
 */
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { sdkClientTimeouts } from './sdk-timeouts.js';

/** src/triggers/targets.ts's InvokeOutcome (structurally: storage sits below triggers). */
export type LambdaInvokeOutcome =
  | { ok: true; response: unknown; answer?: LambdaAnswer }
  | { ok: false; error: string; answer?: LambdaAnswer };
/** How Lambda answered an Invoke: src/triggers/targets.ts's InvokeAnswer. */
export type LambdaAnswer = { statusCode: number; executedVersion?: string; functionError?: string };

export interface LambdaInvokerOptions {
  /** Every call's region (default: the function ARN's). */
  region?: string;
  /** Another endpoint than Lambda's own (tests: a local peer speaking Invoke's REST API). */
  endpoint?: string;
  /** Fixed credentials (tests); otherwise the SDK's default chain (the function's role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

export function lambdaInvoker(
  options: LambdaInvokerOptions = {},
): (functionArn: string, timeoutMs: number, eventJson: Uint8Array) => Promise<LambdaInvokeOutcome> {
  const clients = new Map<string, LambdaClient>();
  const clientFor = (functionArn: string) => {
    const region = options.region ?? functionArn.split(':')[3] ?? '';
    const known = clients.get(region);
    if (known) return known;
    // One attempt: a retry by the SDK would invoke the function again behind the delivery's back;
    // the delivery retries (and counts) failed invocations itself.
    const client = new LambdaClient({
      ...sdkClientTimeouts({
        connectionTimeoutMs: 1_000,
        requestTimeoutMs: 900_000,
        socketTimeoutMs: 900_000,
        maxAttempts: 1,
      }),
      ...(region ? { region } : {}),
      ...(options.endpoint ? { endpoint: options.endpoint } : {}),
      ...(options.credentials ? { credentials: options.credentials } : {}),
    });
    clients.set(region, client);
    return client;
  };
  return async (functionArn, timeoutMs, eventJson) => {
    try {
      const out = await clientFor(functionArn).send(
        new InvokeCommand({
          FunctionName: functionArn,
          InvocationType: 'RequestResponse',
          Payload: eventJson,
        }),
        { abortSignal: AbortSignal.timeout(timeoutMs) },
      );
      const text = out.Payload ? Buffer.from(out.Payload).toString('utf8') : '';
      const answer = {
        statusCode: out.StatusCode ?? 200,
        ...(out.ExecutedVersion !== undefined && { executedVersion: out.ExecutedVersion }),
        ...(out.FunctionError !== undefined && { functionError: out.FunctionError }),
      };
      // FunctionError (Unhandled, or Handled from older runtimes) is a function error, whatever
      // the status: Lambda answers 200 with the error object as payload.
      if (out.FunctionError)
        return { ok: false, error: `${out.FunctionError}${text ? `: ${text.slice(0, 200)}` : ''}`, answer };
      return { ok: true, response: parseJson(text), answer };
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
