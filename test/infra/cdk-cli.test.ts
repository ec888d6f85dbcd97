/**
 * `npx cdk synth` exactly as a user runs it: the CDK CLI, cdk.json's app command and context, the
 * functions bundled, cdk-nag's checks on. Once with no AWS configuration at all (a first try on a
 * laptop, a CI job that synthesizes before its deploy step), once with an account and region (as
 * `cdk deploy` runs the app). The in-process variants of every flavour are in nag.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../infra/log-functions.js';

/** The environment without anything that names an AWS account, region, profile or credentials. */
function bareEnvironment(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(AWS_|CDK_)/.test(k)));
  // No credential lookup through the instance metadata service (there is none here).
  return { ...env, AWS_EC2_METADATA_DISABLED: 'true', CI: 'true' };
}

function cdkSynth(extraEnv: Record<string, string>) {
  const out = mkdtempSync(join(tmpdir(), 'cdk-cli-'));
  try {
    const run = spawnSync('npx', ['cdk', 'synth', '--quiet', '--no-notices', '--output', out], {
      cwd: REPO_ROOT,
      env: { ...bareEnvironment(), ...extraEnv },
      encoding: 'utf8',
      timeout: 240_000,
    });
    const template =
      run.status === 0
        ? JSON.stringify(JSON.parse(readFileSync(join(out, 'S3KafkaLog-dev.template.json'), 'utf8')))
        : '';
    return { status: run.status, output: `${run.stdout}\n${run.stderr}`, template };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

describe('npx cdk synth, as cdk.json runs the app', () => {
  it('succeeds with no AWS environment variables', { timeout: 300_000 }, () => {
    const r = cdkSynth({});
    expect(r.status, r.output.slice(-3000)).toBe(0);
    expect(r.output).not.toMatch(/Synthesis finished with errors|KeyMustResolveToString/);
    // The account is CloudFormation's to fill in.
    expect(r.template).toContain('{"Ref":"AWS::AccountId"}');
  });

  it('succeeds with an account and region (as cdk deploy runs it)', { timeout: 300_000 }, () => {
    const r = cdkSynth({
      CDK_DEFAULT_ACCOUNT: '210987654321',
      CDK_DEFAULT_REGION: 'eu-west-1',
      AWS_REGION: 'eu-west-1',
    });
    expect(r.status, r.output.slice(-3000)).toBe(0);
    expect(r.output).not.toMatch(/Synthesis finished with errors/);
    // cdk.json's partition literals: the push grant names the partition, region and account as they are.
    expect(r.template).toContain('arn:aws:execute-api:eu-west-1:210987654321:');
  });
});
