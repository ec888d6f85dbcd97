import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { type AddressInfo, createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export const ROOT = join(import.meta.dirname, '../..');

export interface LocalServer {
  proc: ChildProcess;
  /** `http://127.0.0.1:{port}` */
  origin: string;
  port: number;
  dataDir: string;
}

/** A port free a moment ago, for the Kafka listener (it takes no 0 for "any"). */
export async function freePort(): Promise<number> {
  const probe = createTcpServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

/**
 * Starts `src/server.ts` (as `npm start` does) on a data dir and a port (0: any free one), with the
 * Kafka listener off unless `kafkaPort` names one, and waits for its "listening" line. `env`
 * overrides the backend and the rest (e.g. `STORAGE_BACKEND: 'memory'`, `SCHEDULER_INTERVAL_MS: '0'`).
 * The one way every test that needs a real server process starts one.
 */
export async function startServer(
  dataDir: string,
  port = 0,
  env: Record<string, string> = {},
  kafkaPort = 0,
): Promise<LocalServer> {
  const proc = spawn(
    process.execPath,
    [
      ...['--import', 'tsx', 'src/server.ts', '--port', String(port), '--data-dir', dataDir],
      ...['--kafka-port', String(kafkaPort)],
    ],
    {
      cwd: ROOT,
      env: { ...process.env, STORAGE_BACKEND: 'local', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const lines = createInterface({ input: proc.stdout! });
  const origin = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running: a caller that tries again must not meet it later on the port or the data.
      proc.kill('SIGKILL');
      reject(new Error('server did not start'));
    }, 20_000);
    proc.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    lines.on('line', (line) => {
      try {
        const msg = JSON.parse(line) as { msg: string; url?: string };
        if (msg.msg === 'listening') {
          clearTimeout(timer);
          resolve(msg.url!);
        }
      } catch {
        // not a log line
      }
    });
  });
  return { proc, origin, port: Number(new URL(origin).port), dataDir };
}

export async function stopServer(s: LocalServer | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!s || s.proc.exitCode !== null) return;
  const exited = new Promise((r) => s.proc.once('exit', r));
  s.proc.kill(signal);
  await exited;
}

export async function tempDir(prefix: string): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}
