/**
 * Lambda's Invoke for triggers' Lambda targets, with the adapter (and @aws-sdk/client-lambda)
 * imported on the first invocation. Only the processes that deliver import this module (the
 * scheduled function, the local server): the bundles of the others never hold the Lambda client,
 * and a deliverer without a Lambda target never evaluates it.
 */
import type { LambdaInvokeOutcome, LambdaInvokerOptions } from './lambda-invoker.js';

export type LazyLambdaInvoke = (functionArn: string, timeoutMs: number, event: unknown) => Promise<LambdaInvokeOutcome>;

export function lazyLambdaInvoker(options: LambdaInvokerOptions = {}): LazyLambdaInvoke {
  let invoke: Promise<LazyLambdaInvoke> | undefined;
  return async (functionArn, timeoutMs, event) => {
    invoke ??= import('./lambda-invoker.js').then((m) => m.lambdaInvoker(options));
    return (await invoke)(functionArn, timeoutMs, event);
  };
}
