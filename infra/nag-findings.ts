/**
 * cdk-nag names a wildcard-resource finding after the resource as it resolves in this stack
 * (`AwsSolutions-IAM5[Resource::arn:aws:...:<AWS::AccountId>:<Api>/...]`): literal where the stack
 * knows it (the partition with @aws-cdk/core:enablePartitionLiterals and a concrete region, the
 * account when one is set), `<Ref>` where CloudFormation fills it in. An acknowledgement written by
 * hand matches one of those environments only; this one is made the way cdk-nag makes the finding,
 * with cdk-nag's own flattening, so it matches in every environment (with or without an account,
 * either partition setting).
 */
import { Stack } from 'aws-cdk-lib';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import type { IConstruct } from 'constructs';

export function wildcardResourceFinding(scope: IConstruct, resource: string): string {
  return `AwsSolutions-IAM5[Resource::${flattenCfnReference(Stack.of(scope).resolve(resource))}]`;
}
