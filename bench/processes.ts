import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { mergeResults, runJob, type Job, type JobResult } from './load.js';

export const REPO = join(import.meta.dirname, '..');

export interface ChildServer {
  url: string;
  pid: number;
  /** SIGTERM, then wait for the exit (a --cpu-prof profile is written then). */
  stop(): Promise<void>;
}

/**
 * Starts a node server script as `npm start` does (`node --import tsx <script>`) and waits for
 * its `{"msg":"listening","url":...}` line. stderr is passed through.
 */
export async function startServer(
  script: string,
  args: string[],
  options: { env?: Record<string, string>; nodeArgs?: string[] } = {},
): Promise<ChildServer> {
  const proc = spawn(process.execPath, [...(options.nodeArgs ?? []), '--import', 'tsx', script, ...args], {
    cwd: REPO,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: proc.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start within 60 s`)), 60_000);
    proc.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
    lines.on('line', (line) => {
      try {
        const msg = JSON.parse(line) as { msg?: string; url?: string };
        if (msg.msg === 'listening' && msg.url) {
          clearTimeout(timer);
          resolve(msg.url);
        }
      } catch {
        // not a JSON log line
      }
    });
  });
  lines.removeAllListeners('line');
  lines.on('line', () => {}); // keep draining the server's log
  return {
    url,
    pid: proc.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        const kill = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        proc.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        proc.kill('SIGTERM');
      }),
  };
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

export interface ProcStats {
  rssBytes: number;
  /** Peak RSS over the process's life (VmHWM). */
  peakRssBytes: number;
  /** User + system CPU time, µs. */
  cpuMicros: number;
}

/** Linux /proc figures of a process. */
export function procStats(pid: number): ProcStats {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  // Fields after the command name (which may hold spaces) in /proc/pid/stat: utime is the 14th field, stime the 15th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rssBytes: kb('VmRSS'), peakRssBytes: kb('VmHWM'), cpuMicros: (ticks * 1e6) / CLOCK_TICKS };
}

/**
 * CPU time (µs) all processes of the machine spent busy (user, nice, system, irq, softirq, steal
 * in /proc/stat): with our processes' own time taken off, what other work on the machine used
 * while a cell ran.
 */
export function machineBusyMicros(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return ((user + nice + system + irq + softirq + steal) * 1e6) / CLOCK_TICKS;
}

/** Samples a process's RSS every 100 ms while a phase runs; `stop` gives the highest sample. */
export function sampleRss(pid: number): { stop(): number } {
  let peak = procStats(pid).rssBytes;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, procStats(pid).rssBytes);
    } catch {
      // the process is gone
    }
  }, 100);
  return {
    stop: () => {
      clearInterval(timer);
      try {
        peak = Math.max(peak, procStats(pid).rssBytes);
      } catch {
        // the process is gone
      }
      return peak;
    },
  };
}

/**
 * Where load is generated: in this process, or in `workers` forked processes that each run the
 * job with an equal share of its connections.
 */
export interface LoadRunner {
  readonly description: string;
  run(job: Job): Promise<JobResult>;
  close(): void;
}

export const inProcess: LoadRunner = { description: 'in the bench process', run: runJob, close: () => {} };

export async function forkedWorkers(count: number): Promise<LoadRunner> {
  const workers = await Promise.all(
    Array.from({ length: count }, async () => {
      const child = fork(join(REPO, 'bench/load-worker.ts'), [], {
        execArgv: ['--import', 'tsx'],
        cwd: REPO,
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      await new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) => reject(new Error(`load worker exited with ${code}`)));
      });
      return child;
    }),
  );
  let nextId = 0;
  const ask = (child: ChildProcess, job: Job) =>
    new Promise<JobResult>((resolve, reject) => {
      const id = nextId++;
      const onMessage = (msg: { id: number; result?: JobResult; error?: string }) => {
        if (msg.id !== id) return;
        child.off('message', onMessage);
        if (msg.error) reject(new Error(msg.error));
        else resolve(msg.result!);
      };
      child.on('message', onMessage);
      child.send({ id, job });
    });
  const share = (n: number, i: number) => Math.floor(n / count) + (i < n % count ? 1 : 0);
  return {
    description: `in ${count} forked load processes`,
    run: async (job) => {
      const jobs = workers.map((_, i): Job => {
        switch (job.kind) {
          case 'produce':
            return { ...job, producers: Math.max(1, share(job.producers, i)) };
          case 'fetch':
            return { ...job, consumers: Math.max(1, share(job.consumers, i)) };
          case 'latency':
            // One process holds the open-loop schedule and the consumers; splitting the schedule would change it.
            return job;
        }
      });
      if (job.kind === 'latency') return ask(workers[0]!, job);
      return mergeResults(await Promise.all(workers.map((w, i) => ask(w, jobs[i]!))));
    },
    close: () => {
      for (const w of workers) w.disconnect();
    },
  };
}
