import * as hdr from 'hdr-histogram-js';

/** Markdown tables and number formats for the bench's printout (pasted as is into docs/performance.md). */
export function table(headers: string[], rows: (string | number)[][], align?: ('l' | 'r')[]): string {
  const cells = rows.map((r) => r.map(String));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const a = align ?? headers.map((_, i) => (i === 0 ? 'l' : 'r'));
  const line = (r: string[]) =>
    `| ${r.map((c, i) => (a[i] === 'l' ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (a[i] === 'l' ? ` ${'-'.repeat(w)} ` : ` ${'-'.repeat(w - 1)}: `)).join('|')}|`;
  return [line(headers), rule, ...cells.map(line)].join('\n');
}

export const int = (n: number) => Math.round(n).toLocaleString('en-US');
export const fixed = (n: number, digits = 1) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
export const ms = (micros: number) => fixed(micros / 1000, micros < 10_000 ? 2 : 1);
export const pct = (ratio: number) => `${Math.round(ratio * 100)}%`;
export const mib = (bytes: number) => `${fixed(bytes / 2 ** 20, 0)} MiB`;

export interface Percentiles {
  count: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

/** Percentiles (µs) of an encoded HDR histogram. */
export function percentiles(encoded: string): Percentiles {
  const h = hdr.decodeFromCompressedBase64(encoded);
  return {
    count: h.totalCount,
    p50: h.getValueAtPercentile(50),
    p99: h.getValueAtPercentile(99),
    p999: h.getValueAtPercentile(99.9),
    max: h.maxValue,
    mean: h.mean,
  };
}
