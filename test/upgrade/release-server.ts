/**
 * Starts `src/server.ts` of a given checkout (this one, or a release's worktree) as a child process
 * with its own node_modules, on a free HTTP port and a free Kafka port, and waits for both
 * "listening" lines. The fixture writer runs a release this way; the upgrade tests run the current
 * code the same way when they need a process rather than services in-process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { cleanEnv } from '../chaos/server-fleet.js';

export interface ReleaseServer {
  proc: ChildProcess;
  /** `http://127.0.0.1:{port}` */
  origin: string;
  kafkaPort: number;
  /** The last lines it wrote on stderr, for the error when it fails. */
  stderr: string[];
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** A port the OS says is free now (another process may take it before it is used; rare on loopback). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

export async function startReleaseServer(checkout: string, env: Record<string, string>): Promise<ReleaseServer> {
  const kafkaPort = await freePort();
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/server.ts', '--port', '0', '--host', '127.0.0.1', '--kafka-port', String(kafkaPort)],
    { cwd: checkout, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const stderr: string[] = [];
  createInterface({ input: proc.stderr! }).on('line', (l) => {
    stderr.push(l);
    if (stderr.length > 30) stderr.shift();
  });
  const lines = createInterface({ input: proc.stdout! });
  const origin = await new Promise<string>((resolve, reject) => {
    let url: string | undefined;
    let kafka = false;
    const timer = setTimeout(
      () => reject(new Error(`server in ${checkout} did not start: ${stderr.join('\n')}`)),
      60_000,
    );
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server in ${checkout} exited with ${code}: ${stderr.join('\n')}`));
    });
    lines.on('line', (line) => {
      let msg: { msg?: string; url?: string };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        return;
      }
      if (msg.msg === 'listening') url = msg.url;
      if (msg.msg === 'kafka listening') kafka = true;
      if (msg.msg === 'kafka listener not started') {
        clearTimeout(timer);
        reject(new Error(`server in ${checkout}: Kafka port ${kafkaPort} not taken: ${line}`));
      }
      if (url && kafka) {
        clearTimeout(timer);
        resolve(url);
      }
    });
  });
  return {
    proc,
    origin,
    kafkaPort,
    stderr,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill(signal);
      await exited;
    },
  };
}
