/**
 * Real answers against the OpenAPI document: a scenario calls every operation of the document
 * through the app; each answer's status must be one the operation documents, its media type one
 * the status documents, and its JSON body must validate (ajv, JSON Schema 2020-12, as OpenAPI 3.1)
 * against the documented schema. An operation the scenario never reaches fails the test: a new
 * operation needs a step here.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/http/openapi.js';
import { everyOperation } from '../support/every-operation.js';
import { testApp } from '../support/test-app.js';

type Json = Record<string, any>;
const doc = openApiDocument as unknown as {
  paths: Record<string, Record<string, Json>>;
  components: { schemas: Record<string, Json> };
};
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

const operations = Object.entries(doc.paths)
  .flatMap(([template, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({
      key: `${method.toUpperCase()} ${template}`,
      method: method.toUpperCase(),
      template,
      op: item[method]!,
      // Literal segments first: `/topics/-/configs` is its own operation, not `/topics/{topic_name}/configs`.
      literals: template.split('/').filter((s) => s !== '' && !s.startsWith('{')).length,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    })),
  )
  .sort((a, b) => b.literals - a.literals);

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: 'components', components: { schemas: doc.components.schemas } });
const compiled = new Map<object, ReturnType<typeof ajv.compile>>();
const validate = (schema: Json, body: unknown) => {
  const resolved = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"components#/components/'));
  let v = compiled.get(schema);
  if (!v) compiled.set(schema, (v = ajv.compile(resolved)));
  return v(body)
    ? []
    : (v.errors ?? []).map((e: { instancePath: string; message?: string }) => `${e.instancePath} ${e.message}`);
};

describe('every operation answers as the OpenAPI document says', () => {
  it('runs the scenario and checks each answer', async () => {
    const { app } = testApp({ env: { REPLICA_STORES: '2' } });
    const reached = new Set<string>();
    const problems: string[] = [];
    const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const isBytes = body instanceof Uint8Array;
      const res = await app.request(path, {
        method,
        headers: { ...(body !== undefined && !isBytes ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body !== undefined ? { body: isBytes ? (body as Uint8Array<ArrayBuffer>) : JSON.stringify(body) } : {}),
      });
      const url = new URL(path, 'http://localhost');
      const match = operations.find((o) => o.method === method && o.pattern.test(url.pathname));
      if (!match) {
        problems.push(`${method} ${url.pathname}: no operation`);
        return { status: res.status, body: undefined as any };
      }
      reached.add(match.key);
      const type = (res.headers.get('content-type') ?? '').split(';')[0]!;
      const raw = Buffer.from(await res.arrayBuffer());
      const documented = match.op.responses[String(res.status)];
      if (!documented) problems.push(`${match.key}: status ${res.status} is not documented`);
      else if (raw.length > 0) {
        const media = documented.content?.[type];
        if (!media) problems.push(`${match.key} ${res.status}: media type ${type} is not documented`);
        else if (type.endsWith('json')) {
          const text = raw.toString('utf8');
          // Streaming produce: one JSON object a line, each a delivery report.
          const values = text.includes('\n{')
            ? text
                .trim()
                .split('\n')
                .map((l) => JSON.parse(l))
            : [JSON.parse(text)];
          for (const v of values)
            for (const e of validate(media.schema ?? {}, v)) problems.push(`${match.key} ${res.status}: ${e}`);
        }
      }
      return {
        status: res.status,
        body: type.endsWith('json') && raw.length > 0 ? JSON.parse(raw.toString('utf8').split('\n')[0]!) : raw,
      };
    };
    await everyOperation(call);

    expect(problems).toEqual([]);
    expect(operations.map((o) => o.key).filter((k) => !reached.has(k))).toEqual([]);
  });
});
