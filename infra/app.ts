/**
 * The CDK app (cdk.json: `npx tsx infra/app.ts`). Settings come from context (infra/stack-config.ts),
 * the account and region from the CLI's environment. cdk-nag's AwsSolutions checks run on every
 * synth (CDK policy validation): an unacknowledged finding fails `cdk synth` and `cdk deploy`.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { LogStack } from './log-stack.js';
import { stackConfig, stackName } from './stack-config.js';

const app = new App();
const config = stackConfig((key) => app.node.tryGetContext(key));
new LogStack(app, stackName(config.stage), {
  config,
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: `Kafka semantics on S3 and DynamoDB (stage ${config.stage})`,
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();
