/**
 * Lambda's Invoke for triggers' Lambda targets, with the adapter (and @aws-sdk/client-lambda)
 * imported on the first invocation. Only the processes that deliver import this module (the
 * scheduled function, the local server): the bundles of the others never hold the Lambda client,
 * and a deliverer without a Lambda target never evaluates it.
 */
import type { LambdaInvokeOutcome, LambdaInvokerOptions } from './lambda-invoker.js';

/** Invokes with the event's JSON text (the delivery writes it: src/triggers/kafka-event.ts). */
export type LazyLambdaInvoke = (
  functionArn: string,
  timeoutMs: number,
  eventJson: Uint8Array,
) => Promise<LambdaInvokeOutcome>;

export function lazyLambdaInvoker(options: LambdaInvokerOptions = {}): LazyLambdaInvoke {
  let invoke: Promise<LazyLambdaInvoke> | undefined;
  return async (functionArn, timeoutMs, eventJson) => {
    invoke ??= import('./lambda-invoker.js').then((m) => m.lambdaInvoker(options));
    return (await invoke)(functionArn, timeoutMs, eventJson);
  };
}
