/**
 * Several `src/server.ts --backend aws` processes on the same DynamoDB table and S3 buckets,
 * standing in for concurrent Lambdas. Each keeps its port across a SIGKILL and restart, so a
 * client's list of servers stays valid; while one is down its requests fail to connect.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const ROOT = join(import.meta.dirname, '../..');

export interface FleetOptions {
  count: number;
  env: Record<string, string>;
  /** The code each server runs (a checkout's root; default this one): a release beside the current code. */
  checkouts?: (string | undefined)[];
}

export interface ServerSlot {
  index: number;
  port: number;
  origin: string;
  proc: ChildProcess | undefined;
  up: boolean;
  kills: number;
  /** The last lines it wrote on stderr (for a report when it fails to start). */
  stderr: string[];
  /** The checkout whose code it runs. */
  checkout: string;
}

export interface Fleet {
  slots: ServerSlot[];
  origins(): string[];
  kill(index: number): Promise<void>;
  restart(index: number): Promise<void>;
  /**
   * A deploy's replacement, as Lambda does it: the server stops taking connections and finishes what
   * it has (SIGTERM), and one on `checkout`'s code takes its place on the same port.
   */
  replace(index: number, checkout: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const slots: ServerSlot[] = [];
  const launch = async (slot: ServerSlot, port: number) => {
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/server.ts', '--backend', 'aws', '--port', String(port), '--host', '127.0.0.1'],
      {
        cwd: slot.checkout,
        env: cleanEnv(options.env),
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    slot.proc = proc;
    createInterface({ input: proc.stderr! }).on('line', (l) => {
      slot.stderr.push(l);
      if (slot.stderr.length > 20) slot.stderr.shift();
    });
    const lines = createInterface({ input: proc.stdout! });
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`server ${slot.index} did not start: ${slot.stderr.join('\n')}`)),
        // A bound only: a first start compiles the checkout's sources (tsx, cold cache), which took
        // over 30 s at a load of 13 on two cores.
        90_000,
      );
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`server ${slot.index} exited with ${code}: ${slot.stderr.join('\n')}`));
      });
      lines.on('line', (line) => {
        if (!line.includes('"listening"')) return;
        clearTimeout(timer);
        resolve((JSON.parse(line) as { url: string }).url);
      });
    });
    slot.origin = url;
    slot.port = Number(new URL(url).port);
    slot.up = true;
    proc.once('exit', () => {
      slot.up = false;
    });
  };

  await Promise.all(
    Array.from({ length: options.count }, async (_, index) => {
      const slot: ServerSlot = {
        index,
        port: 0,
        origin: '',
        proc: undefined,
        up: false,
        kills: 0,
        stderr: [],
        checkout: options.checkouts?.[index] ?? ROOT,
      };
      slots.push(slot);
      await launch(slot, 0);
    }),
  );
  slots.sort((a, b) => a.index - b.index);

  const kill = async (index: number) => {
    const slot = slots[index]!;
    const proc = slot.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    slot.up = false;
    slot.kills++;
    proc.kill('SIGKILL');
    await exited;
  };

  const relaunch = async (slot: ServerSlot) => {
    // The port was just freed; another process could take it in between, so retry a few times.
    for (let attempt = 0; ; attempt++) {
      try {
        await launch(slot, slot.port);
        return;
      } catch (e) {
        if (attempt >= 3) throw e;
        await new Promise((r) => setTimeout(r, 300));
      }
    }
  };

  return {
    slots,
    origins: () => slots.map((s) => s.origin),
    kill,
    async replace(index, checkout) {
      const slot = slots[index]!;
      const proc = slot.proc;
      if (proc && proc.exitCode === null && proc.signalCode === null) {
        const exited = new Promise((r) => proc.once('exit', r));
        slot.up = false;
        proc.kill('SIGTERM');
        await exited;
      }
      slot.checkout = checkout;
      await relaunch(slot);
    },
    async restart(index) {
      await kill(index);
      await relaunch(slots[index]!);
    },
    async stop() {
      await Promise.all(slots.map((s) => kill(s.index)));
    },
  };
}

/** The parent's environment without AWS settings that could point the servers elsewhere. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('AWS_')) env[k] = v;
  return { ...env, NODE_NO_WARNINGS: '1', ...extra };
}
