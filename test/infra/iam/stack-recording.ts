/**
 * The recorded-call check for any suite that drives a function's handler (the Lambda-adapter
 * suites in test/functions; test/infra/data-access.test.ts drives every route of every function):
 * the stack synthesized once per suite, a function's storage as its role reaches it on AWS
 * (recorded-calls.ts), and the calls it made checked against the template by the suite itself,
 * in its own afterAll: no order between test files, no state shared across them.
 */
import type { Storage } from '../../../src/compose.js';
import { serverConfigFromEnv } from '../../../src/config/server-config.js';
import type { DataFunctionName } from '../../../infra/data-access.js';
import { logicalId, synthStack, TEST_ENV } from '../synth.js';
import { CallRecorder, functionRole, type FunctionRole } from './recorded-calls.js';
import { TemplateIam } from './template-iam.js';

export class StackRecording {
  readonly recorder: CallRecorder;
  private readonly iam: TemplateIam;
  private readonly roles = new Map<DataFunctionName, FunctionRole>();
  private readonly stack: ReturnType<typeof synthStack>['stack'];

  /** `context`: the stack's (cdk.json's plus these), e.g. its replica stores; synthesized without bundles. */
  constructor(context: Record<string, unknown>) {
    const synth = synthStack(context, { bundle: false, cfnValidation: false });
    this.stack = synth.stack;
    this.iam = new TemplateIam(synth.template.toJSON() as never, {
      account: TEST_ENV.account!,
      region: TEST_ENV.region!,
      partition: 'aws',
    });
    synth.cleanup();
    this.recorder = new CallRecorder(this.iam);
  }

  role(fn: DataFunctionName): FunctionRole {
    let role = this.roles.get(fn);
    if (!role) {
      const id = logicalId(this.stack, this.stack.functions.byName[fn]);
      // The S3 Express session mode the function's own configuration makes its S3 client ask for.
      const backend = serverConfigFromEnv({ ...this.iam.environmentOf(id), STORAGE_BACKEND: 'aws' }).backend;
      role = functionRole(
        this.iam,
        fn,
        id,
        backend.kind === 'aws' ? (backend.s3ExpressSessionMode ?? 'ReadWrite') : 'ReadWrite',
      );
      this.roles.set(fn, role);
    }
    return role;
  }

  /** `base` (one store per replica store of the stack) as function `fn`'s role reaches it. */
  storage(fn: DataFunctionName, base: Storage): Storage {
    return this.recorder.storage(base, this.role(fn));
  }

  /** The calls the template does not allow, one line each (empty when every call was granted). */
  denied(): string[] {
    return this.recorder.calls
      .filter((c) => c.denied)
      .map((c) => `${c.fn}: ${c.api} ${c.request.action} ${c.request.resource}: ${c.denied}`);
  }

  /** How many calls `fn` made (a suite checks it recorded some, so the check is not vacuous). */
  callsOf(fn: DataFunctionName): number {
    return this.recorder.calls.filter((c) => c.fn === fn).length;
  }
}
