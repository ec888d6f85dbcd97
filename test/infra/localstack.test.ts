/**
 * The local stage (`npm run deploy:local`) as LocalStack's free plan can run it: a REST API, no
 * API Gateway v2, no S3 Express, a Lambda runtime LocalStack has, and only resource types of the
 * free plan's services (infra/localstack-free-plan.ts, with its source).
 */
import { describe, expect, it } from 'vitest';
import { LOCALSTACK_FREE_PLAN_RESOURCE_TYPES } from '../../infra/localstack-free-plan.js';
import { synthStack } from './synth.js';

describe("the local stage on LocalStack's free plan", () => {
  it('uses only resource types of the free plan, with a REST API in front', () => {
    const s = synthStack({ stage: 'local', retainData: 'false' }, { bundle: false, cfnValidation: false });
    try {
      const types = new Set(
        Object.values(s.template.toJSON().Resources as Record<string, { Type: string }>).map((r) => r.Type),
      );
      expect([...types].filter((t) => !LOCALSTACK_FREE_PLAN_RESOURCE_TYPES.has(t)).sort()).toEqual([]);
      expect(types.has('AWS::ApiGateway::RestApi')).toBe(true);
      const runtimes = Object.values(s.template.findResources('AWS::Lambda::Function')).map(
        (f) => f.Properties.Runtime,
      );
      expect(new Set(runtimes)).toEqual(new Set(['nodejs22.x']));
    } finally {
      s.cleanup();
    }
  });

  it('routes the same paths to the same functions as the HTTP API, with IAM auth and binary bodies', () => {
    const s = synthStack({ stage: 'local', retainData: 'false' }, { bundle: false, cfnValidation: false });
    try {
      const api = Object.values(s.template.findResources('AWS::ApiGateway::RestApi'))[0]!;
      // Every binary body of the wire format (test/functions/rest-api-binary.test.ts runs the client through it).
      expect(api.Properties.BinaryMediaTypes).toEqual([
        'application/vnd.kafka.record-batch.v2',
        'application/vnd.kafka.produce-request',
        'application/vnd.kafka.fetch-response',
        'application/octet-stream',
      ]);
      const resources = s.template.findResources('AWS::ApiGateway::Resource');
      const pathOf = (id: string): string => {
        const r = resources[id];
        if (!r) return '';
        const parent = r.Properties.ParentId;
        return `${parent.Ref ? pathOf(parent.Ref) : ''}/${r.Properties.PathPart}`;
      };
      const methods = Object.values(s.template.findResources('AWS::ApiGateway::Method')).map((m) => ({
        route: `${m.Properties.HttpMethod} ${pathOf(m.Properties.ResourceId.Ref)}`,
        auth: m.Properties.AuthorizationType,
      }));
      expect(methods.map((m) => m.route).sort()).toEqual([
        'ANY /{proxy+}',
        'GET /v3/clusters/{clusterId}/topics/{topicName}/partitions/{partitionId}/records',
        'POST /v3/clusters/{clusterId}/records',
        'POST /v3/clusters/{clusterId}/topics/{topicName}/partitions/{partitionId}/records',
        'POST /v3/clusters/{clusterId}/topics/{topicName}/{action}',
      ]);
      expect(new Set(methods.map((m) => m.auth))).toEqual(new Set(['AWS_IAM']));
    } finally {
      s.cleanup();
    }
  });

  it('refuses an auth mode the REST API cannot carry', () => {
    expect(() =>
      synthStack(
        { stage: 'local', authMode: 'jwt', jwtIssuer: 'https://i.example.com', jwtAudience: 'a' },
        { bundle: false, cfnValidation: false },
      ),
    ).toThrow(/apiFlavor=rest takes authMode=iam only/);
  });
});
