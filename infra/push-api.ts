/**
 * The push API: an API Gateway WebSocket API on which consumers wait for records instead of
 * holding a fetch (and its Lambda) open. Routes (selected by the message's `action`):
 *   $connect   authorization only (IAM/SigV4 by default, the API-key or JWT Lambda authorizer on
 *              request; WebSocket APIs have no JWT authorizer of their own), mock integration
 *   subscribe  the push function (arms partitions), its answer sent back as the route response
 *   ping       keep-alive (API Gateway closes a connection idle for 10 minutes), mock integration
 * Nothing runs while a consumer waits: a produce posts to the connection (PostToConnection) after
 * its commit. There is no $disconnect route: a subscription of a gone connection is removed by the
 * first post that gets 410, or ignored once its TTL passed.
 */
import { Stack, Validations } from 'aws-cdk-lib';
import { WebSocketApi, WebSocketStage, type IWebSocketRouteAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketIamAuthorizer, WebSocketLambdaAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { WebSocketLambdaIntegration, WebSocketMockIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { PolicyStatement, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct, type IConstruct } from 'constructs';
import { wildcardResourceFinding } from './nag-findings.js';
import type { ApiAuth } from './stack-config.js';

export interface PushApiProps {
  apiName: string;
  /** Handles `subscribe`. */
  pushFunction: IFunction;
  auth: ApiAuth;
  /** For auth modes apiKey and jwt: a REQUEST authorizer answering with an IAM policy. */
  authorizerFunction?: IFunction;
  throttle: { rateLimit: number; burstLimit: number };
}

/** A mock integration that accepts the request (a $connect or ping that needs no function). */
const accept = (id: string) =>
  new WebSocketMockIntegration(id, {
    requestTemplates: { $default: '{"statusCode": 200}' },
    templateSelectionExpression: '\\$default',
  });

export class PushApi extends Construct {
  readonly api: WebSocketApi;
  readonly stage: WebSocketStage;

  constructor(scope: Construct, id: string, props: PushApiProps) {
    super(scope, id);
    this.api = new WebSocketApi(this, 'Api', {
      apiName: `${props.apiName}-push`,
      description: 'Push: consumers wait here for records instead of polling',
      routeSelectionExpression: '$request.body.action',
      connectRouteOptions: {
        integration: accept('ConnectIntegration'),
        authorizer: authorizerFor(props.auth, props.authorizerFunction),
      },
    });
    const routes = [
      this.api.addRoute('subscribe', {
        integration: new WebSocketLambdaIntegration('SubscribeIntegration', props.pushFunction),
        returnResponse: true,
      }),
      this.api.addRoute('ping', { integration: accept('PingIntegration') }),
    ];
    for (const route of routes) {
      Validations.of(route).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason:
          'A WebSocket API authorizes on $connect only (IAM, or the Lambda authorizer); every later message travels on that authorized connection.',
      });
    }
    this.stage = new WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: 'push',
      autoDeploy: true,
      throttle: props.throttle,
    });
    Validations.of(this.stage).acknowledge({
      id: 'AwsSolutions-APIG1',
      reason:
        'WebSocket access logs need the account-wide API Gateway CloudWatch role, which one stack should not own; connects are ' +
        'authorized (IAM or the authorizer, which logs), subscribe runs in the push function (which logs), ping carries nothing.',
    });
  }

  /** `wss://{api-id}.execute-api.{region}.amazonaws.com/push`: the client's `pushUrl`. */
  get url(): string {
    return this.stage.url;
  }

  /**
   * PostToConnection on this stage's connections (execute-api:ManageConnections on `POST
   * @connections`): a commit tells the consumers armed on its partitions. Not GET (a connection's
   * details) nor DELETE (closing it): nothing in the stack does either.
   */
  grantPost(grantee: IGrantable): void {
    const connections = Stack.of(this).formatArn({
      service: 'execute-api',
      resource: this.api.apiId,
      resourceName: `${this.stage.stageName}/POST/@connections/*`,
    });
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['execute-api:ManageConnections'], resources: [connections] }),
    );
    Validations.of(grantee.grantPrincipal as unknown as IConstruct).acknowledge({
      id: wildcardResourceFinding(this, connections),
      reason:
        'Connection ids are made by API Gateway at connect time: the grant names POST on every connection of this stage and nothing else.',
    });
  }
}

function authorizerFor(auth: ApiAuth, authorizerFunction: IFunction | undefined): IWebSocketRouteAuthorizer {
  if (auth.mode === 'iam') return new WebSocketIamAuthorizer();
  if (!authorizerFunction) throw new Error(`authMode=${auth.mode} needs the authorizer function`);
  return new WebSocketLambdaAuthorizer(
    auth.mode === 'apiKey' ? 'ApiKeyAuthorizer' : 'JwtAuthorizer',
    authorizerFunction,
    {
      identitySource: [
        auth.mode === 'apiKey' ? 'route.request.header.x-api-key' : 'route.request.header.Authorization',
      ],
    },
  );
}
