/**
 * The order S3 lists keys in: UTF-8 binary order, which is Unicode code point order.
 *
 * JavaScript's `<` compares UTF-16 code units instead, and the two orders differ as soon as a key
 * holds a character above U+FFFF: it is stored as a surrogate pair (0xD800-0xDFFF), which sorts
 * before U+E000-U+FFFF in UTF-16 but after them in UTF-8 (`'\u{1F600}' < '\uFFFD'` is true in
 * JavaScript, while S3 lists U+FFFD first). Comparing the first differing code units after moving
 * the surrogates above U+FFFF gives code point order without decoding anything.
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** Code units below 0xD800 keep their place; U+E000-U+FFFF move down, surrogates above them. */
function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}
