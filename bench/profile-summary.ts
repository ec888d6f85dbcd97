/**
 * Self time per function of a V8 CPU profile (`node --cpu-prof`), heaviest first.
 *   npx tsx bench/profile-summary.ts bench/results/profiles/CPU.*.cpuprofile [top=20]
 * With several files (one per thread), the largest is summarized.
 */
import { readFileSync, statSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO } from './processes.js';
import { fixed, table } from './report.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface SelfTime {
  name: string;
  where: string;
  selfMs: number;
  /** Share of the time the thread was busy (not idle). */
  ofBusy: number;
}

const IDLE = new Set(['(idle)', '(program)']);

function location(url: string, line: number): string {
  if (!url) return '';
  let path = url;
  if (url.startsWith('file://')) path = relative(REPO, fileURLToPath(url));
  // Under tsx, src/ functions all report line 1 (the transformed module); a line 1 says nothing.
  return line > 0 ? `${path}:${line + 1}` : path;
}

export function selfTimes(profile: CpuProfile): {
  busyMs: number;
  totalMs: number;
  idleMs: number;
  functions: SelfTime[];
} {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const micros = new Map<number, number>();
  profile.samples.forEach((id, i) => micros.set(id, (micros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const grouped = new Map<string, { name: string; where: string; micros: number }>();
  let idle = 0;
  for (const [id, us] of micros) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const name = functionName || '(anonymous)';
    if (IDLE.has(name)) {
      idle += us;
      continue;
    }
    const where = location(url, lineNumber);
    const key = `${name} ${where}`;
    const g = grouped.get(key) ?? { name, where, micros: 0 };
    g.micros += us;
    grouped.set(key, g);
  }
  const total = profile.endTime - profile.startTime;
  const busy = [...grouped.values()].reduce((n, g) => n + g.micros, 0);
  const functions = [...grouped.values()]
    .sort((a, b) => b.micros - a.micros)
    .map((g) => ({ name: g.name, where: g.where, selfMs: g.micros / 1000, ofBusy: g.micros / Math.max(1, busy) }));
  return { busyMs: busy / 1000, totalMs: total / 1000, idleMs: idle / 1000, functions };
}

/** Adds up self time by file (src/... or node internals), to see which module the time goes to. */
export function byFile(functions: SelfTime[]): { file: string; selfMs: number; ofBusy: number }[] {
  const files = new Map<string, { selfMs: number; ofBusy: number }>();
  for (const f of functions) {
    const file = f.where ? f.where.replace(/:\d+$/, '') : f.name.startsWith('(') ? f.name : '(native)';
    const e = files.get(file) ?? { selfMs: 0, ofBusy: 0 };
    e.selfMs += f.selfMs;
    e.ofBusy += f.ofBusy;
    files.set(file, e);
  }
  return [...files].map(([file, e]) => ({ file, ...e })).sort((a, b) => b.selfMs - a.selfMs);
}

/**
 * Who calls the hottest functions: for each of the `top` heaviest functions, the nearest caller in
 * src/ (or the nearest named caller when no src/ frame is on the stack), with its share of the self time.
 */
export function srcCallers(
  profile: CpuProfile,
  top = 8,
): { name: string; callers: { caller: string; selfMs: number }[] }[] {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const micros = new Map<number, number>();
  profile.samples.forEach((id, i) => micros.set(id, (micros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const label = (n: ProfileNode) =>
    `${n.callFrame.functionName || '(anonymous)'} ${location(n.callFrame.url, n.callFrame.lineNumber)}`.trim();
  const callerOf = (id: number): string => {
    let named: string | undefined;
    for (let p = parent.get(id); p !== undefined; p = parent.get(p)) {
      const n = byId.get(p)!;
      if (n.callFrame.url.includes('/src/')) return label(n);
      if (!named && n.callFrame.functionName && n.callFrame.functionName !== '(anonymous)') named = label(n);
    }
    return named ?? '(root)';
  };
  const heaviest = selfTimes(profile).functions.slice(0, top);
  return heaviest.map((f) => {
    const callers = new Map<string, number>();
    for (const [id, us] of micros) {
      const n = byId.get(id)!;
      if (label(n) !== `${f.name} ${f.where}`.trim()) continue;
      const c = callerOf(id);
      callers.set(c, (callers.get(c) ?? 0) + us);
    }
    return {
      name: `${f.name} ${f.where}`.trim(),
      callers: [...callers]
        .map(([caller, us]) => ({ caller, selfMs: us / 1000 }))
        .sort((a, b) => b.selfMs - a.selfMs)
        .slice(0, 4),
    };
  });
}

export function summarize(path: string, top = 20): string {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const s = selfTimes(profile);
  const head = `Profile ${relative(REPO, path)}: ${fixed(s.totalMs / 1000, 1)} s wall, ${fixed(s.busyMs / 1000, 1)} s busy on the main thread, ${fixed(s.idleMs / 1000, 1)} s idle`;
  const fnTable = table(
    ['function', 'where', 'self ms', '% of busy'],
    s.functions.slice(0, top).map((f) => [f.name, f.where || '(native)', fixed(f.selfMs, 0), fixed(f.ofBusy * 100, 1)]),
    ['l', 'l', 'r', 'r'],
  );
  const fileTable = table(
    ['file', 'self ms', '% of busy'],
    byFile(s.functions)
      .slice(0, top)
      .map((f) => [f.file, fixed(f.selfMs, 0), fixed(f.ofBusy * 100, 1)]),
    ['l', 'r', 'r'],
  );
  const callers = srcCallers(profile)
    .map((f) => `- ${f.name}: ${f.callers.map((c) => `${c.caller} (${fixed(c.selfMs, 0)} ms)`).join('; ')}`)
    .join('\n');
  return `${head}\n\nTop ${top} functions by self time:\n\n${fnTable}\n\nBy file:\n\n${fileTable}\n\nNearest src/ caller of the heaviest functions:\n\n${callers}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  // `prof/CPU.*.cpuprofile` expands to one file per thread (tsx's loader runs in a worker with a
  // profile of its own): every argument but a trailing number is a profile, and the largest is the
  // busiest thread's, the one summarized (as bench.ts picks it).
  const args = process.argv.slice(2);
  const top = args.length > 1 && /^\d+$/.test(args.at(-1)!) ? Number(args.pop()) : 20;
  const [path, ...others] = args.sort((a, b) => statSync(b).size - statSync(a).size);
  if (!path) {
    console.error('usage: tsx bench/profile-summary.ts FILE.cpuprofile... [top]');
    process.exit(2);
  }
  console.log(summarize(path, top));
  if (others.length > 0) console.log(`(Smaller profiles not summarized: ${others.join(', ')})`);
}
