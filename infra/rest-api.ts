/**
 * The REST API (API Gateway v1) front: the same routes, functions and IAM auth as the HTTP API,
 * for where API Gateway v2 is not to be had. LocalStack's free plan has v1 but not v2
 * (infra/localstack-free-plan.ts), so the local stage deploys this one (`-c apiFlavor=rest`).
 *
 * Binary bodies (record batches, Kafka's ProduceRequest and FetchResponse) pass through as base64,
 * as with the HTTP API: every media type of src/wire/media-types.ts is declared binary, and
 * hono/aws-lambda reads either API's event. REST APIs have no JWT authorizer
 * and API keys of their own that would put the keys in the template, so only authMode=iam is
 * offered here (stack-config.ts refuses the others).
 */
import { type RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { BINARY_MEDIA_TYPES } from '../src/wire/media-types.js';
import { API_ROUTES, type HttpFunctionName } from './routes.js';

export interface LogRestApiProps {
  apiName: string;
  stageName: string;
  functions: Readonly<Record<HttpFunctionName, IFunction>>;
  throttle: { rateLimit: number; burstLimit: number };
  logRetention: logs.RetentionDays;
  removalPolicy: RemovalPolicy;
}

export class LogRestApi extends Construct {
  readonly api: apigw.RestApi;
  readonly accessLogs: logs.LogGroup;

  constructor(scope: Construct, id: string, props: LogRestApiProps) {
    super(scope, id);
    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.api = new apigw.RestApi(this, 'Api', {
      restApiName: props.apiName,
      description: 'Kafka semantics over HTTPS (Confluent REST v3 paths) on S3 and DynamoDB (REST API front)',
      // Any other body is carried as text, which corrupts bytes that are not UTF-8.
      binaryMediaTypes: [...BINARY_MEDIA_TYPES],
      endpointTypes: [apigw.EndpointType.REGIONAL],
      cloudWatchRole: false,
      deployOptions: {
        stageName: props.stageName,
        throttlingRateLimit: props.throttle.rateLimit,
        throttlingBurstLimit: props.throttle.burstLimit,
        accessLogDestination: new apigw.LogGroupLogDestination(this.accessLogs),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields(),
      },
      defaultMethodOptions: { authorizationType: apigw.AuthorizationType.IAM },
    });
    addGatewayErrors(this.api);
    const integrations = new Map<HttpFunctionName, apigw.LambdaIntegration>();
    const integration = (target: HttpFunctionName) => {
      let i = integrations.get(target);
      if (!i) integrations.set(target, (i = new apigw.LambdaIntegration(props.functions[target], { proxy: true })));
      return i;
    };
    for (const route of API_ROUTES) {
      // REST API path parts are the HTTP API's, with `{proxy+}` as the greedy last part in both.
      const method = this.api.root.resourceForPath(route.path).addMethod(route.method, integration(route.target));
      Validations.of(method).acknowledge({
        id: 'AwsSolutions-COG4',
        reason:
          'Every method requires IAM (SigV4) authorization, as the HTTP API does; a Cognito user pool would be a second identity system.',
      });
    }
    Validations.of(this.api).acknowledge(
      {
        id: 'AwsSolutions-APIG2',
        reason:
          'The app validates every body itself and answers with Kafka error names; an API Gateway validator would answer the same mistakes in another shape.',
      },
      {
        id: 'AwsSolutions-APIG3',
        reason:
          'WAF is priced per request on top of the log; the stage is throttled, and a WAF web ACL can be attached to the stage without changing the stack.',
      },
      {
        id: 'AwsSolutions-APIG6',
        reason:
          'JSON access logs (with request ids) are on; execution logs need an account-wide API Gateway CloudWatch role, which a stack should not set for its account.',
      },
    );
  }

  /** The stage's base URL (https://{api-id}.execute-api.{region}.amazonaws.com/{stage}/). */
  get url(): string {
    return this.api.url;
  }

  /** The API's id (its execute-api ARN's resource). */
  get apiId(): string {
    return this.api.restApiId;
  }
}

/**
 * What API Gateway answers itself, in the server's error envelope (src/http/error-mapping.ts) so
 * the client reads a Kafka error. A body over API Gateway's 10 MB is REQUEST_TOO_LARGE: 413
 * PAYLOAD_TOO_LARGE, as the server answers a body over its own bound. A body under 10 MB whose
 * Lambda event is over 6,291,456 bytes (binary bodies base64-encoded) is refused by Lambda before
 * the function runs; API Gateway reports that as INTEGRATION_FAILURE, the same type as a throttled
 * or crashed function, and a gateway response's template is not a program (no VTL), so it cannot
 * tell them apart: that answer stays a 502 (retriable for the client, its outcome unknown) and only names the
 * possible causes. Clients keep bodies within Lambda's bound before sending (maxRequestBytes).
 */
function addGatewayErrors(api: apigw.RestApi): void {
  const json = (body: { error_code: number; message: string; error?: string }) => ({
    'application/json': JSON.stringify(body),
  });
  api.addGatewayResponse('RequestTooLarge', {
    type: apigw.ResponseType.REQUEST_TOO_LARGE,
    statusCode: '413',
    templates: json({
      error_code: 41300,
      message: "The request body is over API Gateway's 10 MB",
      error: 'PAYLOAD_TOO_LARGE',
    }),
  });
  api.addGatewayResponse('IntegrationFailure', {
    type: apigw.ResponseType.INTEGRATION_FAILURE,
    // Fixed, since the error code must say it: what API Gateway answers a failed Lambda invocation.
    statusCode: '502',
    templates: json({
      error_code: 502,
      message:
        'The function could not be invoked or failed: a request whose Lambda event is over 6,291,456 bytes (binary bodies count base64-encoded, about 4.5 MB), a throttle, or a crash',
    }),
  });
}
