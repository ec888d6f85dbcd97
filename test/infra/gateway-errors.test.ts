/**
 * The REST API flavour answers what API Gateway refuses itself in the server's error envelope, so
 * the client reads a Kafka error: the synthesized gateway responses, read as the client reads them.
 */
import { describe, expect, it } from 'vitest';
import { errorFromBody } from '../../src/client/errors.js';
import { toErrorResponse } from '../../src/http/error-mapping.js';
import { KafkaError } from '../../src/wire/errors.js';
import { synthStack } from './synth.js';

describe("the REST API's gateway responses", () => {
  const s = synthStack({ apiFlavor: 'rest' }, { bundle: false, cfnValidation: false });
  const responses = Object.fromEntries(
    Object.values(s.template.findResources('AWS::ApiGateway::GatewayResponse')).map((r) => [
      r.Properties.ResponseType as string,
      {
        status: Number(r.Properties.StatusCode),
        body: JSON.parse(r.Properties.ResponseTemplates['application/json']) as Record<string, unknown>,
      },
    ]),
  );
  s.cleanup();

  it('a body over API Gateway 10 MB is 413 PAYLOAD_TOO_LARGE, as the server answers a body over its bound', () => {
    const r = responses.REQUEST_TOO_LARGE!;
    const server = toErrorResponse(new KafkaError('PAYLOAD_TOO_LARGE', 'over'));
    expect(r.status).toBe(server.status);
    expect(r.body).toMatchObject({ error_code: server.body.error_code, error: server.body.error });
    expect(errorFromBody(r.status, r.body)).toMatchObject({ type: 'PAYLOAD_TOO_LARGE', retriable: false, status: 413 });
  });

  it("a failed invocation (an event over Lambda's 6 MB among the causes) is a 502 the client retries, naming the causes", () => {
    const r = responses.INTEGRATION_FAILURE!;
    expect(r).toMatchObject({ status: 502, body: { error_code: 502 } });
    expect(r.body.message).toMatch(/6,291,456 bytes.*base64/);
    expect(errorFromBody(r.status, r.body)).toMatchObject({ type: 'NETWORK_EXCEPTION', retriable: true, status: 502 });
  });
});
