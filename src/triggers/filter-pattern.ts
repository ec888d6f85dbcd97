/**
 * Lambda's event filtering patterns (FilterCriteria), as a pure matcher: a pattern is a JSON object
 * whose leaves are arrays of conditions, a field matching when any condition holds. Conditions:
 * a value (exact), `{"prefix"}`, `{"suffix"}`, `{"numeric":[op, n, ...]}`, `{"exists": bool}` and
 * `{"anything-but": value or [values]}`. A field holding an array matches when any element does.
 */
type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export function matchesPattern(pattern: Record<string, unknown>, event: unknown): boolean {
  for (const [field, rule] of Object.entries(pattern)) {
    const value = isObject(event) ? (event as Record<string, unknown>)[field] : undefined;
    if (Array.isArray(rule)) {
      if (!rule.some((c) => matchesCondition(c, value))) return false;
    } else if (isObject(rule)) {
      if (!isObject(value) || !matchesPattern(rule as Record<string, unknown>, value)) return false;
    } else return false;
  }
  return true;
}

/** A record passes the criteria when any of its patterns matches (no criteria: every record). */
export const matchesAny = (patterns: Record<string, unknown>[], event: unknown) =>
  patterns.length === 0 || patterns.some((p) => matchesPattern(p, event));

function matchesCondition(c: unknown, value: unknown): boolean {
  if (isObject(c)) {
    const cond = c as Record<string, Json>;
    if ('exists' in cond) return cond.exists === (value !== undefined);
    if (value === undefined) return false;
    return Array.isArray(value) ? value.some((v) => operator(cond, v)) : operator(cond, value);
  }
  if (value === undefined) return false;
  return Array.isArray(value) ? value.some((v) => v === c) : value === c;
}

function operator(cond: Record<string, Json>, v: unknown): boolean {
  if ('prefix' in cond) return typeof v === 'string' && v.startsWith(String(cond.prefix));
  if ('suffix' in cond) return typeof v === 'string' && v.endsWith(String(cond.suffix));
  if ('anything-but' in cond) {
    const but = cond['anything-but'];
    return !(Array.isArray(but) ? but : [but]).includes(v as Json);
  }
  if ('numeric' in cond) {
    if (typeof v !== 'number') return false;
    const ops = cond.numeric as Json[];
    for (let i = 0; i + 1 < ops.length; i += 2) if (!compare(String(ops[i]), v, Number(ops[i + 1]))) return false;
    return true;
  }
  return false;
}

function compare(op: string, v: number, n: number): boolean {
  switch (op) {
    case '=':
      return v === n;
    case '<':
      return v < n;
    case '<=':
      return v <= n;
    case '>':
      return v > n;
    case '>=':
      return v >= n;
    default:
      return false;
  }
}

const isObject = (x: unknown) => typeof x === 'object' && x !== null && !Array.isArray(x);
