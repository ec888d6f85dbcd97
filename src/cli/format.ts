/** Output helpers: aligned tables (as Kafka's tools print them) and record rendering. */

/** Columns left-aligned and padded to the widest cell, separated by two spaces; no trailing blanks. */
export function table(header: string[], rows: (string | number | null | undefined)[][]): string[] {
  const cells = [header, ...rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

export type BytesFormat = 'string' | 'base64' | 'hex';

export function showBytes(b: Buffer | null, format: BytesFormat): string {
  if (b === null) return 'null';
  if (format === 'base64') return b.toString('base64');
  if (format === 'hex') return b.toString('hex');
  return b.toString('utf8');
}

/** Fixed-point with `digits` decimals, as Java's %.Nf. */
export const fixed = (n: number, digits: number): string => (Number.isFinite(n) ? n.toFixed(digits) : 'NaN');

/** The value at percentile p (0..1) of ascending `sorted`, as kafka-producer-perf-test picks it. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}
