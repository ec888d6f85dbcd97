/**
 * Synthesizes the stack in-process for tests: offline, into a temporary cloud assembly, with the
 * functions bundled by the local esbuild (or not bundled at all when a test only reads the
 * template's shape). Optionally runs cdk-nag's AwsSolutions pack as CDK policy validation.
 *
 * The app gets cdk.json's own context (its feature flags change what the template says: partition
 * literals, merged policies), read from the file the CLI reads, under the test's own settings.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Validations, type Environment } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { REPO_ROOT } from '../../infra/log-functions.js';
import { LogStack } from '../../infra/log-stack.js';
import { stackConfig, stackName } from '../../infra/stack-config.js';

export interface Synthesized {
  stack: LogStack;
  template: Template;
  outdir: string;
  cleanup(): void;
}

export interface SynthOptions {
  /** Bundle the functions (default true); without, assets are placeholders. */
  bundle?: boolean;
  /** Run cdk-nag's AwsSolutions pack (default false). */
  nag?: boolean;
  /** Run aws-cdk-lib's built-in CloudFormation schema validation (default true; it takes seconds). */
  cfnValidation?: boolean;
  /**
   * The stack's account and region (default a concrete account in us-east-1). `{}` is what
   * `cdk synth` gives the app without any AWS configuration: an environment-agnostic stack.
   */
  env?: Environment;
}

/** The context of cdk.json, as the CDK CLI passes it to the app. */
export const CDK_JSON_CONTEXT: Readonly<Record<string, unknown>> = JSON.parse(
  readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8'),
).context;

export const TEST_ENV: Environment = { account: '123456789012', region: 'us-east-1' };

export function synthStack(context: Record<string, unknown> = {}, options: SynthOptions = {}): Synthesized {
  const outdir = mkdtempSync(join(tmpdir(), 'cdk-test-'));
  const app = new App({
    outdir,
    builtinCloudFormationValidation: options.cfnValidation ?? true,
    context: {
      ...CDK_JSON_CONTEXT,
      stage: 'test',
      ...context,
      ...(options.bundle === false && { 'aws:cdk:bundling-stacks': [] }),
    },
  });
  const config = stackConfig((key) => app.node.tryGetContext(key));
  const stack = new LogStack(app, stackName(config.stage), {
    config,
    env: options.env ?? TEST_ENV,
  });
  if (options.nag) Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  app.synth();
  return {
    stack,
    template: Template.fromStack(stack),
    outdir,
    cleanup: () => rmSync(outdir, { recursive: true, force: true }),
  };
}

/** The logical id of a construct's CloudFormation resource. */
export function logicalId(stack: LogStack, construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as Parameters<LogStack['getLogicalId']>[0]);
}
