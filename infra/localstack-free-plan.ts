/**
 * What the local stage may use, so that `npm run deploy:local` works on LocalStack's free plan:
 * the CloudFormation resource types of the services whose "minimum plan" is the free (Hobby) one in
 * LocalStack's AWS API coverage catalog (docs.localstack.cloud/api-coverage/v1/index.md, read
 * 2026-12-03). API Gateway v2 (HTTP and WebSocket APIs) and S3 Express One Zone are paid, which is
 * why the local stage has a REST API and standard buckets only. Re-read the catalog when moving
 * LocalStack's version (docs/deploy.md names the one the project was checked against).
 *
 * test/infra/localstack.test.ts holds the local stage's template against this list.
 */
export const LOCALSTACK_FREE_PLAN_RESOURCE_TYPES: ReadonlySet<string> = new Set([
  // API Gateway (v1: REST APIs)
  'AWS::ApiGateway::RestApi',
  'AWS::ApiGateway::Resource',
  'AWS::ApiGateway::Method',
  'AWS::ApiGateway::Deployment',
  'AWS::ApiGateway::Stage',
  // Not read from the catalog: LocalStack's API Gateway CloudFormation models include it (put_gateway_response).
  'AWS::ApiGateway::GatewayResponse',
  // Lambda
  'AWS::Lambda::Function',
  'AWS::Lambda::Permission',
  'AWS::Lambda::EventInvokeConfig',
  // S3 (general-purpose buckets) and DynamoDB
  'AWS::S3::Bucket',
  'AWS::S3::BucketPolicy',
  'AWS::DynamoDB::Table',
  // IAM, EventBridge, CloudWatch, CloudWatch Logs, SNS
  'AWS::IAM::Role',
  'AWS::IAM::Policy',
  'AWS::Events::Rule',
  'AWS::CloudWatch::Alarm',
  'AWS::CloudWatch::Dashboard',
  'AWS::Logs::LogGroup',
  'AWS::SNS::Topic',
  'AWS::SNS::TopicPolicy',
  'AWS::SNS::Subscription',
  // The CDK's own: the custom resource that empties buckets for retainData=false.
  'Custom::S3AutoDeleteObjects',
  'AWS::CDK::Metadata',
]);
