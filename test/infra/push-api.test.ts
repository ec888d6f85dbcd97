/**
 * The push WebSocket API in the template (synthesized without bundling): its routes, the same
 * authorization as the HTTP API on $connect (IAM by default; the API-key or JWT Lambda authorizer,
 * since WebSocket APIs have no JWT authorizer), no function behind $connect and ping, and the
 * right of the functions that commit to post to the stage's connections.
 */
import type { LogHttpApi } from '../../infra/http-api.js';
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { logicalId, synthStack, type Synthesized } from './synth.js';

const quick = { bundle: false, cfnValidation: false } as const;

function withStack(context: Record<string, unknown>, check: (s: Synthesized) => void) {
  const s = synthStack(context, quick);
  try {
    check(s);
  } finally {
    s.cleanup();
  }
}

const routes = (s: Synthesized) => {
  const apiId = logicalId(s.stack, s.stack.pushApi!.api);
  return Object.values(s.template.findResources('AWS::ApiGatewayV2::Route')).filter(
    (r) => r.Properties.ApiId.Ref === apiId,
  );
};
const integrationOf = (s: Synthesized, route: { Properties: { Target: { 'Fn::Join': [string, unknown[]] } } }) => {
  const id = (route.Properties.Target['Fn::Join'][1][1] as { Ref: string }).Ref;
  return s.template.toJSON().Resources[id].Properties;
};

describe('push API', () => {
  it('IAM mode: a WebSocket API whose $connect takes SigV4 (as the HTTP API), mock $connect and ping, subscribe on the push function', () => {
    withStack({}, (s) => {
      s.template.hasResourceProperties('AWS::ApiGatewayV2::Api', {
        ProtocolType: 'WEBSOCKET',
        RouteSelectionExpression: '$request.body.action',
      });
      const byKey = Object.fromEntries(routes(s).map((r) => [r.Properties.RouteKey, r]));
      expect(Object.keys(byKey).sort()).toEqual(['$connect', 'ping', 'subscribe']);
      expect(byKey.$connect!.Properties.AuthorizationType).toBe('AWS_IAM');
      expect(integrationOf(s, byKey.$connect!).IntegrationType).toBe('MOCK');
      expect(integrationOf(s, byKey.ping!).IntegrationType).toBe('MOCK');
      const subscribe = integrationOf(s, byKey.subscribe!);
      expect(subscribe.IntegrationType).toBe('AWS_PROXY');
      expect(JSON.stringify(subscribe.IntegrationUri)).toContain(logicalId(s.stack, s.stack.functions.byName.push));
      expect(byKey.subscribe!.Properties.RouteResponseSelectionExpression).toBe('$default');
      // The HTTP API is IAM too: the same mode on both.
      const httpApiId = logicalId(s.stack, (s.stack.api as LogHttpApi).api);
      const httpRoutes = Object.values(s.template.findResources('AWS::ApiGatewayV2::Route')).filter(
        (r) => r.Properties.ApiId.Ref === httpApiId,
      );
      expect(new Set(httpRoutes.map((r) => r.Properties.AuthorizationType))).toEqual(new Set(['AWS_IAM']));
      // The stage is throttled like the HTTP API, and the URL is an output.
      s.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        StageName: 'push',
        AutoDeploy: true,
        DefaultRouteSettings: Match.objectLike({ ThrottlingRateLimit: 1000, ThrottlingBurstLimit: 2000 }),
      });
      expect(s.template.toJSON().Outputs.PushUrl).toBeDefined();
    });
  });

  it("the functions that commit may POST to the stage's connections (not GET or DELETE them), the others not at all; push is sized for its small job", () => {
    withStack({}, (s) => {
      const manageOf = (name: keyof typeof s.stack.functions.byName) => {
        const roleId = logicalId(s.stack, s.stack.functions.byName[name].role as never);
        return Object.values(s.template.findResources('AWS::IAM::Policy'))
          .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
          .flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[])
          .filter((st) => [st.Action].flat().some((a) => a.startsWith('execute-api:')))
          .map((st) => JSON.stringify(st.Resource));
      };
      for (const name of ['produce', 'admin', 'scheduler'] as const) {
        expect(manageOf(name), name).toHaveLength(1);
        expect(manageOf(name)[0], name).toMatch(/\/push\/POST\/@connections\/\*"\]\]\}$/);
      }
      for (const name of ['fetch', 'push', 'heartbeat'] as const) expect(manageOf(name), name).toEqual([]);
      s.template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp('^Push:'),
        MemorySize: 256,
      });
    });
  });

  it('apiKey mode: $connect uses the API-key Lambda authorizer on x-api-key', () => {
    withStack({ authMode: 'apiKey', apiKeySha256: 'a'.repeat(64) }, (s) => {
      const connect = routes(s).find((r) => r.Properties.RouteKey === '$connect')!;
      expect(connect.Properties.AuthorizationType).toBe('CUSTOM');
      s.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
        ApiId: { Ref: logicalId(s.stack, s.stack.pushApi!.api) },
        AuthorizerType: 'REQUEST',
        IdentitySource: ['route.request.header.x-api-key'],
      });
    });
  });

  it('jwt mode: $connect uses a JWT Lambda authorizer that knows the issuer and audiences', () => {
    withStack({ authMode: 'jwt', jwtIssuer: 'https://issuer.example.com', jwtAudience: 'log-clients' }, (s) => {
      const connect = routes(s).find((r) => r.Properties.RouteKey === '$connect')!;
      expect(connect.Properties.AuthorizationType).toBe('CUSTOM');
      s.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
        ApiId: { Ref: logicalId(s.stack, s.stack.pushApi!.api) },
        AuthorizerType: 'REQUEST',
        IdentitySource: ['route.request.header.Authorization'],
      });
      s.template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: Match.objectLike({ JWT_ISSUER: 'https://issuer.example.com', JWT_AUDIENCE: 'log-clients' }),
        },
      });
    });
  });
});
