/**
 * The HTTP API (API Gateway v2) in front of the functions: the routes of routes.ts, one
 * authorizer for every route (SigV4/IAM by default; JWT or API key on request), throttling and
 * JSON access logs on the $default stage.
 *
 * Routes are added with addRoutes (HttpApi's `defaultIntegration` fails to synth here); the
 * admin function's `ANY /{proxy+}` plays the catch-all.
 */
import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  type CfnStage,
  HttpApi,
  HttpMethod,
  LogGroupLogDestination,
  type HttpStage,
  type IHttpRouteAuthorizer,
} from 'aws-cdk-lib/aws-apigatewayv2';
import {
  HttpIamAuthorizer,
  HttpJwtAuthorizer,
  HttpLambdaAuthorizer,
  HttpLambdaResponseType,
} from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { API_ROUTES, type HttpFunctionName } from './routes.js';
import type { ApiAuth } from './stack-config.js';

export interface LogHttpApiProps {
  apiName: string;
  functions: Readonly<Record<HttpFunctionName, IFunction>>;
  auth: ApiAuth;
  /** Required when auth.mode is apiKey. */
  authorizerFunction?: IFunction;
  throttle: { rateLimit: number; burstLimit: number };
  /**
   * A lower throttle on the produce and fetch routes: API Gateway enforces it across every Lambda
   * instance at no cost, but for the route as a whole, not per caller (HTTP APIs have no usage
   * plans); per-principal quotas are the app's (docs/security.md).
   */
  dataRouteThrottle?: { rateLimit: number; burstLimit: number };
  logRetention: logs.RetentionDays;
  removalPolicy: RemovalPolicy;
}

/** One JSON line per request; requestId joins it to the function's logs (apiRequestId there). */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    time: '$context.requestTimeEpoch',
    ip: '$context.identity.sourceIp',
    caller: '$context.identity.userArn',
    principal: '$context.authorizer.principalId',
    method: '$context.httpMethod',
    path: '$context.path',
    routeKey: '$context.routeKey',
    status: '$context.status',
    responseLength: '$context.responseLength',
    latencyMs: '$context.responseLatency',
    integrationLatencyMs: '$context.integrationLatency',
    integrationError: '$context.integrationErrorMessage',
    authorizerError: '$context.authorizer.error',
  }),
);

export class LogHttpApi extends Construct {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  readonly accessLogs: logs.LogGroup;

  constructor(scope: Construct, id: string, props: LogHttpApiProps) {
    super(scope, id);
    this.api = new HttpApi(this, 'Api', {
      apiName: props.apiName,
      description: 'Kafka semantics over HTTPS (Confluent REST v3 paths) on S3 and DynamoDB',
      createDefaultStage: false,
      defaultAuthorizer: authorizerFor(props.auth, props.authorizerFunction),
    });
    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.stage = this.api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: { destination: new LogGroupLogDestination(this.accessLogs), format: ACCESS_LOG_FORMAT },
    });
    const integrations = new Map<HttpFunctionName, HttpLambdaIntegration>();
    const integration = (target: HttpFunctionName) => {
      let i = integrations.get(target);
      if (!i)
        integrations.set(target, (i = new HttpLambdaIntegration(`${target}Integration`, props.functions[target])));
      return i;
    };
    const routes = API_ROUTES.flatMap((route) =>
      this.api.addRoutes({
        path: route.path,
        methods: [HttpMethod[route.method]],
        integration: integration(route.target),
      }),
    );
    const data = props.dataRouteThrottle;
    if (data) {
      // A stage's route settings name routes that must exist first.
      for (const r of routes) this.stage.node.addDependency(r);
      // RouteSettings is untyped JSON in CloudFormation's schema: CDK passes it as written, so CloudFormation's own names.
      (this.stage.node.defaultChild as CfnStage).routeSettings = Object.fromEntries(
        API_ROUTES.filter((r) => r.target !== 'admin').map((r) => [
          `${r.method} ${r.path}`,
          { ThrottlingRateLimit: data.rateLimit, ThrottlingBurstLimit: data.burstLimit },
        ]),
      );
    }
  }

  /** The API's base URL (https://{api-id}.execute-api.{region}.amazonaws.com/). */
  get url(): string {
    return this.stage.url;
  }

  /** The API's id (its execute-api ARN's resource). */
  get apiId(): string {
    return this.api.apiId;
  }
}

function authorizerFor(auth: ApiAuth, authorizerFunction: IFunction | undefined): IHttpRouteAuthorizer {
  switch (auth.mode) {
    case 'iam':
      return new HttpIamAuthorizer();
    case 'jwt':
      return new HttpJwtAuthorizer('JwtAuthorizer', auth.issuer, { jwtAudience: auth.audiences });
    case 'apiKey':
      if (!authorizerFunction) throw new Error('authMode=apiKey needs the authorizer function');
      return new HttpLambdaAuthorizer('ApiKeyAuthorizer', authorizerFunction, {
        responseTypes: [HttpLambdaResponseType.SIMPLE],
        identitySource: ['$request.header.x-api-key'],
        resultsCacheTtl: Duration.minutes(5),
      });
  }
}
