import type { QueryOptions } from './ports.js';

/**
 * Sort-key bounds of a query folded into one interval, for engines that take a single range
 * (DynamoDB allows one sort-key condition; SQLite walks one index range).
 *
 * Engines order strings by their UTF-8 bytes, which is code-point order; so does this module.
 * (JavaScript's `<` orders by UTF-16 code units; the two differ only between characters above
 * U+FFFF and those in U+E000..U+FFFF.)
 */
export interface SortKeyBound {
  value: string;
  inclusive: boolean;
}

export interface SortKeyInterval {
  lower?: SortKeyBound;
  upper?: SortKeyBound;
  /** No sort key can satisfy the bounds. */
  empty: boolean;
  /**
   * True when the interval expresses every option exactly; false when `beginsWith` could not be
   * turned into an upper bound (its last character is U+10FFFF) and must be checked separately.
   */
  exact: boolean;
}

export function sortKeyInterval(o: QueryOptions): SortKeyInterval {
  const lowers: SortKeyBound[] = [];
  const uppers: SortKeyBound[] = [];
  if (o.gte !== undefined) lowers.push({ value: o.gte, inclusive: true });
  if (o.gt !== undefined) lowers.push({ value: o.gt, inclusive: false });
  if (o.lte !== undefined) uppers.push({ value: o.lte, inclusive: true });
  if (o.lt !== undefined) uppers.push({ value: o.lt, inclusive: false });
  let exact = true;
  if (o.beginsWith !== undefined && o.beginsWith !== '') {
    lowers.push({ value: o.beginsWith, inclusive: true });
    const end = prefixEnd(o.beginsWith);
    if (end === undefined) exact = false;
    else uppers.push({ value: end, inclusive: false });
  }
  // The tightest lower bound is the greatest; on a tie the exclusive one is tighter. Mirrored above.
  const lower = lowers.reduce<SortKeyBound | undefined>((best, b) => {
    if (!best) return b;
    const c = compareUtf8(b.value, best.value);
    return c > 0 || (c === 0 && !b.inclusive) ? b : best;
  }, undefined);
  const upper = uppers.reduce<SortKeyBound | undefined>((best, b) => {
    if (!best) return b;
    const c = compareUtf8(b.value, best.value);
    return c < 0 || (c === 0 && !b.inclusive) ? b : best;
  }, undefined);
  let empty = false;
  if (lower && upper) {
    const c = compareUtf8(lower.value, upper.value);
    empty = c > 0 || (c === 0 && !(lower.inclusive && upper.inclusive));
  }
  return { ...(lower && { lower }), ...(upper && { upper }), empty, exact };
}

/**
 * The least string greater than every string starting with `prefix`: the prefix with its last
 * code point incremented (skipping the surrogate range). Undefined when the last code point is
 * already U+10FFFF (no such string without backtracking; callers then filter instead).
 */
export function prefixEnd(prefix: string): string | undefined {
  const chars = [...prefix];
  const last = chars.pop();
  if (last === undefined) return undefined;
  let cp = last.codePointAt(0)! + 1;
  if (cp === 0xd800) cp = 0xe000;
  if (cp > 0x10ffff) return undefined;
  return chars.join('') + String.fromCodePoint(cp);
}

/**
 * Compares two strings by their UTF-8 bytes, as S3, DynamoDB and SQLite do, without encoding them
 * (it runs for every bound of every query). UTF-8 byte order is code-point order, which is UTF-16
 * code-unit order except that surrogates (U+D800..U+DFFF, the halves of code points above U+FFFF)
 * must sort after U+E000..U+FFFF: at the first differing unit, if both are at or above U+D800, the
 * surrogates move up by 0x2000 and U+E000..U+FFFF down by 0x800.
 */
export function compareUtf8(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x < 0xe000 ? x + 0x2000 : x - 0x800;
      y = y < 0xe000 ? y + 0x2000 : y - 0x800;
    }
    return x < y ? -1 : 1;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}
