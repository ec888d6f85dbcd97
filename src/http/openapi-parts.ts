/**
 * What the OpenAPI path modules share: a JSON answer, the error answers, the path parameters. The
 * schemas in them are the zod schemas the routes validate with and answer by; zod-openapi renders
 * them as JSON Schema (openapi.ts).
 */
import * as z from 'zod';
import type { oas31, ZodOpenApiRequestBodyObject, ZodOpenApiResponseObject } from 'zod-openapi';

/** Every error answer's body (error-mapping.ts); a throttled one adds throttle_time_ms. */
export const errorSchema = z
  .object({
    error_code: z.int().meta({ description: 'HTTP status or Confluent five-digit code' }),
    message: z.string(),
    error: z.string().meta({ description: "Kafka's error name, e.g. OFFSET_OUT_OF_RANGE" }),
    throttle_time_ms: z.int().meta({ description: "Kafka's throttle time, on a 429" }).optional(),
  })
  .meta({ id: 'Error' });

export const ok = (schema: z.ZodType | oas31.ReferenceObject, description = 'OK'): ZodOpenApiResponseObject => ({
  description,
  content: { 'application/json': { schema } },
});

export const errors = (...statuses: number[]): Record<string, ZodOpenApiResponseObject> =>
  Object.fromEntries(statuses.map((s) => [String(s), ok(errorSchema, 'Error')]));

export const noContent = { 204: { description: 'No content' } };

export const jsonBody = (schema: z.ZodType, required = true): ZodOpenApiRequestBodyObject => ({
  required,
  content: { 'application/json': { schema } },
});

/** Every path parameter, by the name the paths give it. */
const PATH = z.object({
  cluster_id: z.string(),
  topic_name: z.string(),
  partition_id: z.int().min(0),
  broker_id: z.int().min(0),
  name: z.string(),
  transactional_id: z.string(),
  consumer_group_id: z.string(),
  share_group_id: z.string(),
  consumer_id: z.string(),
  group_name: z.string(),
  instance: z.string(),
});

/** The path parameters of an operation, by name. */
export const inPath = (...names: (keyof typeof PATH.shape)[]) =>
  PATH.pick(Object.fromEntries(names.map((n) => [n, true])) as Partial<Record<keyof typeof PATH.shape, true>>);

/** The schema with a description (zod's meta, which zod-openapi renders). */
export const described = <T extends z.ZodType>(schema: T, description: string): T => schema.meta({ description });

/** An ISO 8601 instant as the answers write it (Date.toISOString). */
export const dateTime = z.string().meta({ format: 'date-time' });

/** v3's resource metadata and relationship (resources.ts builds them). */
export const resourceMetadata = z.object({ self: z.string(), resource_name: z.string() });
export const related = z.object({ related: z.string() });
/** A v3 list's metadata: next is the following page, or null. */
export const listMetadata = z.object({ self: z.string(), next: z.string().nullable() });

/** A v3 list (resources.ts `list`): kind, metadata and data; its operations name the kind in their summary. */
export const listSchema = z
  .object({ kind: z.string(), metadata: listMetadata, data: z.array(z.looseObject({})) })
  .meta({ id: 'List' });
export const list = ok(listSchema);

/**
 * True when A and B are one type: every property present in both, optional in both or neither,
 * typed alike. `Same<..> extends true` in a route module ties an answer schema to the wire type
 * the client reads (src/wire), so a change to one alone fails the typecheck.
 */
export type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Compiles only with `true`: `type _ = Holds<Same<X, Y>>`. */
export type Holds<T extends true> = T;

/** An answer schema's body as the wire types describe it: without v3's envelope. */
export type WireBody<S extends z.ZodType> = Omit<z.input<S>, 'kind' | 'metadata' | 'cluster_id' | 'consumer_group'>;
