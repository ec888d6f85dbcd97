/**
 * Synthesizes the stack in-process for tests: offline, into a temporary cloud assembly, with the
 * functions bundled by the local esbuild (or not bundled at all when a test only reads the
 * template's shape). Optionally runs cdk-nag's AwsSolutions pack as CDK policy validation.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
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
}

export function synthStack(context: Record<string, unknown> = {}, options: SynthOptions = {}): Synthesized {
  const outdir = mkdtempSync(join(tmpdir(), 'cdk-test-'));
  const app = new App({
    outdir,
    builtinCloudFormationValidation: options.cfnValidation ?? true,
    context: { stage: 'test', ...context, ...(options.bundle === false && { 'aws:cdk:bundling-stacks': [] }) },
  });
  const config = stackConfig((key) => app.node.tryGetContext(key));
  const stack = new LogStack(app, stackName(config.stage), {
    config,
    env: { account: '123456789012', region: 'us-east-1' },
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
