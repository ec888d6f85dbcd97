/**
 * The shape of a message definition, after Kafka's JSON message specs
 * (clients/src/main/resources/common/message/*.json in apache/kafka): a message is a list of
 * fields, each present in a range of versions, optionally nullable in some of them, optionally a
 * tagged field in the flexible versions. One generic codec (codec.ts) reads and writes every
 * message from these definitions; there is no hand-written encoder per version.
 */

/** Kafka's version range syntax: "3+", "2-4", "5", or "none". */
export type Versions = string;

export type Primitive =
  | 'int8'
  | 'int16'
  | 'int32'
  | 'int64'
  | 'uint16'
  | 'float64'
  | 'bool'
  | 'string'
  | 'bytes'
  | 'records'
  | 'uuid';

export type FieldType = Primitive | { array: Primitive | Field[] } | { struct: Field[] };

export interface Field {
  name: string;
  type: FieldType;
  versions: Versions;
  nullableVersions?: Versions;
  /** Tagged fields (flexible versions only): written only when they differ from their default. */
  tag?: number;
  taggedVersions?: Versions;
  /** The value read when the field is absent from a version (or untagged); per type otherwise. */
  default?: unknown;
}

export interface MessageSpec {
  name: string;
  validVersions: Versions;
  flexibleVersions: Versions;
  fields: Field[];
}

export interface ApiSpec {
  apiKey: number;
  name: string;
  request: MessageSpec;
  response: MessageSpec;
}

export interface VersionRange {
  min: number;
  max: number;
}

const cache = new Map<string, VersionRange>();

export function parseVersions(v: Versions): VersionRange {
  let r = cache.get(v);
  if (r) return r;
  if (v === 'none') r = { min: 1, max: 0 };
  else if (v.endsWith('+')) r = { min: Number(v.slice(0, -1)), max: Number.MAX_SAFE_INTEGER };
  else if (v.includes('-')) {
    const [a, b] = v.split('-');
    r = { min: Number(a), max: Number(b) };
  } else r = { min: Number(v), max: Number(v) };
  if (!Number.isInteger(r.min) || (r.max !== Number.MAX_SAFE_INTEGER && !Number.isInteger(r.max)))
    throw new Error(`Bad version range ${v}`);
  cache.set(v, r);
  return r;
}

export const inVersions = (v: Versions | undefined, version: number): boolean => {
  if (v === undefined) return false;
  const r = parseVersions(v);
  return version >= r.min && version <= r.max;
};

/** Shorthands that keep the definitions close to the JSON specs they follow. */
export const f = (
  name: string,
  type: FieldType,
  versions: Versions,
  extra: Omit<Field, 'name' | 'type' | 'versions'> = {},
): Field => ({ name, type, versions, ...extra });
export const arrayOf = (item: Primitive | Field[]): FieldType => ({ array: item });
export const structOf = (fields: Field[]): FieldType => ({ struct: fields });
export const message = (
  name: string,
  validVersions: Versions,
  flexibleVersions: Versions,
  fields: Field[],
): MessageSpec => ({ name, validVersions, flexibleVersions, fields });
