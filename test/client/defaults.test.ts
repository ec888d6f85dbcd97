/**
 * Each client default is written once (PRODUCER_DEFAULTS, CONSUMER_DEFAULTS): an unset config
 * resolves to exactly those values, and docs/client.md names the same.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONSUMER_DEFAULTS, Consumer, PRODUCER_DEFAULTS } from '../../src/client/index.js';
import { resolveProducerConfig } from '../../src/client/producer/producer.js';
import { Transport } from '../../src/client/transport.js';
import { COMPRESSION_LEVELS } from '../../src/wire/compression/index.js';

describe('client defaults', () => {
  it('an empty producer config resolves to PRODUCER_DEFAULTS', () => {
    const resolved = resolveProducerConfig({}, 30_000);
    expect(resolved).toMatchObject(PRODUCER_DEFAULTS);
    expect(resolved).toMatchObject({ acks: 'all', idempotent: true, requestTimeoutMs: 30_000 });
  });

  it('an empty consumer config resolves to CONSUMER_DEFAULTS', () => {
    const consumer = new Consumer(new Transport({ url: 'http://127.0.0.1:1' }));
    expect((consumer as unknown as { c: object }).c).toMatchObject(CONSUMER_DEFAULTS);
  });
});

/**
 * docs/client.md's config tables say the defaults again, for readers: each default they name must
 * be the constant's, and each constant must be in its table.
 */
describe("docs/client.md's config tables", () => {
  const doc = readFileSync(new URL('../../docs/client.md', import.meta.url), 'utf8');
  /** `key | default` of each table row under the `## {heading}` section; "`a` / `b` | x / y" rows give both. */
  const documented = (heading: string): Map<string, string> => {
    const section = doc.split(/^## /m).find((s) => s.startsWith(`${heading}\n`));
    if (!section) throw new Error(`no section ${heading}`);
    const out = new Map<string, string>();
    for (const line of section.split('\n')) {
      const cells = line.split('|').map((c) => c.trim());
      if (cells.length < 4 || !cells[1]!.startsWith('`')) continue;
      const keys = cells[1]!.split(' / ').map((k) => k.replaceAll('`', ''));
      const values = keys.length > 1 ? cells[2]!.split(' / ') : [cells[2]!];
      keys.forEach((k, i) => out.set(k, values[i] ?? ''));
    }
    return out;
  };
  const UNITS: Record<string, number> = { KiB: 1024, MiB: 1024 * 1024 };
  /** A default cell's value: a quoted string, a boolean, or a number (with commas or a KiB/MiB unit); else undefined. */
  const cellValue = (cell: string): unknown => {
    const text = cell.replaceAll('`', '').trim();
    const quoted = /^'([^']*)'/.exec(text);
    if (quoted) return quoted[1];
    if (/^(true|false)\b/.test(text)) return text.startsWith('true');
    const n = /^(-?[\d,]+)(?: (KiB|MiB))?/.exec(text);
    return n ? Number(n[1]!.replaceAll(',', '')) * (n[2] ? UNITS[n[2]]! : 1) : undefined;
  };

  it.each([
    ['Producer', PRODUCER_DEFAULTS, { compressionGzipLevel: 'gzip', compressionZstdLevel: 'zstd' } as const],
    ['Consumer', CONSUMER_DEFAULTS, {} as const],
  ] as const)('%s: every default named is the constant, every constant is named', (heading, defaults, levels) => {
    const rows = documented(heading);
    const constants: Record<string, unknown> = { ...defaults };
    for (const [key, codec] of Object.entries(levels)) constants[key] = COMPRESSION_LEVELS[codec]!.default;
    const mismatches = [...rows]
      .filter(([key, cell]) => key in constants && cellValue(cell) !== constants[key])
      .map(([key, cell]) => `${key}: docs say ${cell}, the constant is ${String(constants[key])}`);
    expect(mismatches).toEqual([]);
    expect(Object.keys(constants).filter((key) => !rows.has(key))).toEqual([]);
  });
});
