/**
 * The served OpenAPI document checked by tools nobody here wrote: swagger-parser validates it
 * against the OpenAPI 3.1 schema, and Redocly's linter runs its recommended rules over it.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { operationIdFor } from '../../src/http/openapi.js';
import { testApp } from '../support/test-app.js';

/** As `npm start` serves it (a request's origin is the document's first server). */
const served = async () =>
  (await (await testApp().app.request('http://127.0.0.1:8080/openapi.json')).json()) as Record<string, unknown>;

describe('the OpenAPI document', () => {
  it('names the origin it was fetched from as its first server, whatever the port', async () => {
    const { app } = testApp();
    const doc = (await (await app.request('http://127.0.0.1:9000/openapi.json')).json()) as {
      servers: { url: string }[];
    };
    expect(doc.servers[0]!.url).toBe('http://127.0.0.1:9000');
    expect(doc.servers.map((s) => s.url)).not.toContain('http://127.0.0.1:8080');
  });

  it('is a valid OpenAPI 3.1 document (swagger-parser)', async () => {
    const doc = await served();
    expect(doc.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy();
  });

  it("passes Redocly's recommended rules with no error and no warning", async () => {
    // The package is private and has no licence to name: the one rule turned off.
    const config = await createConfig({ extends: ['recommended'], rules: { 'info-license': 'off' } });
    const problems = await lintFromString({
      source: JSON.stringify(await served()),
      absoluteRef: 'openapi.json',
      config,
    });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });

  it('names every operation, uniquely, and offers every auth mode of the deployment and the local bearer tokens', async () => {
    const doc = (await served()) as {
      paths: Record<string, Record<string, { operationId?: string }>>;
      components: { securitySchemes: object };
    };
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['apiKey', 'bearer', 'jwt', 'sigv4']);
  });

  it('documents the v2 consumer answers in their own media type', async () => {
    const doc = (await served()) as {
      paths: Record<string, Record<string, { responses: Record<string, { content?: object }> }>>;
    };
    const created = doc.paths['/consumers/{group_name}']!.post!.responses['200']!.content!;
    expect(Object.keys(created)).toEqual(['application/vnd.kafka.v2+json']);
  });

  it('derives an operationId from the method and the literal path segments', () => {
    expect(operationIdFor('post', '/v3/clusters/{cluster_id}/topics/{topic_name}/records:batch')).toBe(
      'postClustersTopicsRecordsBatch',
    );
    expect(operationIdFor('get', '/consumers/{group_name}/instances/{instance}/positions/beginning')).toBe(
      'getConsumersInstancesPositionsBeginning',
    );
  });
});
