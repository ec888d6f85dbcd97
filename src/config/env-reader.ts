/**
 * Reading the server's environment variables (src/config/server-config.ts) without a schema
 * library: every cold start of every Lambda function parses its environment once, and building
 * and running a zod schema of some eighty variables cost each about 5 ms of its import (a tenth of
 * the fetch function's; `npm run bench:bundles`). Each variable is read by a small function that
 * returns its value or throws an `EnvProblem`; `readEnv` names every bad variable in one error.
 */

/** Why a variable's value is refused (the message follows the variable's name). */
export class EnvProblem extends Error {}

/** Reads one variable: its raw text (undefined when unset) to its value, or throws an EnvProblem. */
export type EnvField<T> = (raw: string | undefined) => T;

export type EnvValues<S extends Record<string, EnvField<unknown>>> = { [K in keyof S]: ReturnType<S[K]> };

/** Every field of `spec` from `env`; one `Invalid configuration: NAME: why; ...` error for all bad ones. */
export function readEnv<S extends Record<string, EnvField<unknown>>>(
  env: Record<string, string | undefined>,
  spec: S,
): EnvValues<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, field] of Object.entries(spec)) {
    try {
      out[name] = field(env[name]);
    } catch (e) {
      if (!(e instanceof EnvProblem)) throw e;
      problems.push(`${name}: ${e.message}`);
    }
  }
  if (problems.length > 0) throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  return out as EnvValues<S>;
}

/** Any text, or undefined when unset. */
export const optionalText: EnvField<string | undefined> = (raw) => raw;

/** Any text, `fallback` when unset. */
export const text =
  (fallback: string): EnvField<string> =>
  (raw) =>
    raw ?? fallback;

function nonEmptyText(raw: string): string {
  if (raw === '') throw new EnvProblem('must not be empty');
  return raw;
}

/** Text of at least one character, or undefined when unset. */
export const optionalNonEmpty: EnvField<string | undefined> = (raw) => (raw === undefined ? raw : nonEmptyText(raw));

/** Text of at least one character, `fallback` when unset. */
export const nonEmpty =
  (fallback: string): EnvField<string> =>
  (raw) =>
    raw === undefined ? fallback : nonEmptyText(raw);

function member<T extends string>(values: readonly T[], raw: string): T {
  if (!(values as readonly string[]).includes(raw))
    throw new EnvProblem(`must be one of ${values.join(', ')} (got "${raw}")`);
  return raw as T;
}

/** One of `values`, or undefined when unset. */
export const optionalOneOf =
  <T extends string>(values: readonly T[]): EnvField<T | undefined> =>
  (raw) =>
    raw === undefined ? raw : member(values, raw);

/** One of `values`, `fallback` when unset. */
export const oneOf =
  <T extends string>(values: readonly T[], fallback: NoInfer<T>): EnvField<T> =>
  (raw) =>
    raw === undefined ? fallback : member(values, raw);

/** A whole number within [min, max], read as `Number()` reads it (as the former zod coercion did). */
function integerIn(raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new EnvProblem(`must be a whole number (got "${raw}")`);
  if (n < min) throw new EnvProblem(`must be at least ${min} (got ${n})`);
  if (n > max) throw new EnvProblem(`must be at most ${max} (got ${n})`);
  return n;
}

/** A whole number of at least `min`, or undefined when unset. */
export const optionalInteger =
  (min: number): EnvField<number | undefined> =>
  (raw) =>
    raw === undefined ? raw : integerIn(raw, min, Number.MAX_SAFE_INTEGER);

/** A whole number in [min, max], `fallback` when unset. */
export const integer =
  (min: number, fallback: number, max = Number.MAX_SAFE_INTEGER): EnvField<number> =>
  (raw) =>
    raw === undefined ? fallback : integerIn(raw, min, max);
