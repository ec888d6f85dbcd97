/**
 * The OpenAPI document of the HTTP API (served at /openapi.json). Paths follow Confluent REST Proxy
 * v3; operations v3 lacks are marked `x-extension: true`. Every path module builds its operations
 * from the zod schemas its routes validate with and answer by; zod-openapi renders them.
 */
import { createDocument, type oas31, type ZodOpenApiObject } from 'zod-openapi';
import { RELEASE } from '../wire/release.js';
import { groupPaths } from './group-openapi.js';
import { errorSchema, listSchema } from './openapi-parts.js';
import { recordPaths } from './record-openapi.js';
import { securityPaths } from './security-openapi.js';
import { shareGroupPaths } from './share-group-openapi.js';
import { topicPaths } from './topic-openapi.js';
import { transactionPaths } from './transaction-openapi.js';
import { triggerPaths } from './trigger-openapi.js';

type Json = Record<string, unknown>;

const document: ZodOpenApiObject = {
  openapi: '3.1.0',
  info: {
    title: 'Serverless Kafka-semantics log',
    version: RELEASE,
    description:
      "Confluent REST Proxy v3 paths and shapes where v3 has the operation (operations v3 lacks are marked `x-extension: true`); REST Proxy v2's consumer instances under /consumers; Kafka's error names in `error`.",
  },
  // The first server is the origin the document is fetched from (openApiDocumentAt).
  servers: [
    {
      url: 'https://{api_id}.execute-api.{region}.amazonaws.com',
      description: 'A deployed stage (the stack output ApiUrl)',
      variables: { api_id: { default: 'api-id' }, region: { default: 'us-east-1' } },
    },
  ],
  // One of the deployment's auth modes (infra/stack-config.ts authMode); the local server takes a
  // bearer token from its auth config, or none. The principal each names: docs/security.md.
  security: [{ sigv4: [] }, { jwt: [] }, { apiKey: [] }, { bearer: [] }, {}],
  paths: {
    ...topicPaths,
    ...recordPaths,
    ...groupPaths,
    ...shareGroupPaths,
    ...transactionPaths,
    ...securityPaths,
    ...triggerPaths,
  },
  components: {
    securitySchemes: {
      sigv4: {
        type: 'apiKey',
        in: 'header',
        name: 'Authorization',
        description:
          'authMode=iam (the default): AWS Signature Version 4 for service execute-api, checked by API Gateway against IAM',
        'x-amazon-apigateway-authtype': 'awsSigv4',
      },
      jwt: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'authMode=jwt: a JWT from the configured issuer, with one of the configured audiences',
      },
      apiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'x-api-key',
        description: 'authMode=apiKey: a key whose SHA-256 digest the stack holds',
      },
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description: 'The local server with an auth config (AUTH_CONFIG): a token mapped to a principal',
      },
    },
    schemas: { Error: errorSchema, List: listSchema },
  },
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/**
 * An operationId for every operation that has none: the method and the path's literal segments
 * (`post /v3/clusters/{cluster_id}/topics/{topic_name}/records:batch` ->
 * `postClustersTopicsRecordsBatch`), so an operation added without one still gets a stable name.
 */
export function operationIdFor(method: string, path: string): string {
  const words = path
    .split('/')
    .filter((seg) => seg !== '' && seg !== 'v3' && !seg.startsWith('{'))
    .flatMap((seg) => seg.split(/[:\-_.]/))
    .map((w) => w.replace(/\{[^}]*\}/g, ''))
    .filter((w) => w !== '');
  return method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

/** REST Proxy v2 answers in its own media type, as the consumer-instance routes do. */
function v2MediaType(operation: Json): void {
  for (const response of Object.values((operation.responses ?? {}) as Record<string, Json>)) {
    const content = response.content as Record<string, unknown> | undefined;
    if (content?.['application/json'] === undefined) continue;
    response.content = { 'application/vnd.kafka.v2+json': content['application/json'] };
  }
}

/** API Gateway's own refusal (after the document is rendered, so in JSON Schema). */
const GATEWAY_DENIED = (description: string) => ({
  description,
  content: { 'application/json': { schema: { type: 'object', properties: { message: { type: 'string' } } } } },
});

function finish(doc: oas31.OpenAPIObject): oas31.OpenAPIObject {
  const seen = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      let id = (op.operationId as string | undefined) ?? operationIdFor(method, path);
      for (let n = 2; seen.has(id); n++) id = `${operationIdFor(method, path)}${n}`;
      seen.add(id);
      op.operationId = id;
      if (path.startsWith('/consumers/')) v2MediaType(op);
      // API Gateway answers these itself on a deployed stage, before any function runs.
      const responses = op.responses as Record<string, Json>;
      responses['401'] ??= GATEWAY_DENIED('No credentials, or an expired JWT (authMode=jwt)');
      responses['403'] ??= GATEWAY_DENIED('Credentials that IAM, the JWT authorizer or the API-key authorizer refused');
    }
  }
  return doc;
}

export const openApiDocument = finish(createDocument(document));

/**
 * The document as served from `origin`: that origin first among its servers, so a client or
 * Swagger UI generated from it calls the server that answered (any port, any host), not a fixed one.
 */
export function openApiDocumentAt(origin: string) {
  return {
    ...openApiDocument,
    servers: [
      { url: origin, description: 'The server this document was fetched from' },
      ...(openApiDocument.servers ?? []),
    ],
  };
}
