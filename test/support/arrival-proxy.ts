/**
 * An HTTP proxy in a child process that notes when each `records:fetch` request reaches it, by its
 * own clock (the test's too: one machine), in a file the test reads synchronously: a test whose
 * thread is kept busy can wait, without yielding, until a request has left its process. The proxy
 * holds every fetch after the first until released, so that no answer reaches the test while it is
 * still counting what left.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { tempDir } from './local-server.js';

const SCRIPT = `
const http = require('node:http');
const { appendFileSync } = require('node:fs');
const [target, log] = [new URL(process.argv[1]), process.argv[2]];
const agent = new http.Agent({ keepAlive: true });
let fetches = 0;
let released = false;
const held = [];
require('node:readline').createInterface({ input: process.stdin }).on('line', () => {
  released = true;
  for (const go of held.splice(0)) go();
});
http.createServer((req, res) => {
  const at = Date.now();
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const fetch = req.url.endsWith('/records:fetch');
    if (fetch) {
      const offset = JSON.parse(body).topics[0].partitions[0].fetch_offset;
      appendFileSync(log, JSON.stringify({ at, offset }) + '\\n');
    }
    const forward = () => {
      const options = { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent };
      const up = http.request(options, (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
      up.on('error', () => res.destroy());
      up.end(body);
    };
    if (fetch && fetches++ > 0 && !released) held.push(forward);
    else forward();
  });
}).listen(0, '127.0.0.1', function () { process.stdout.write(JSON.stringify({ port: this.address().port }) + '\\n'); });
`;

export interface ArrivalProxy {
  origin: string;
  /** Each fetch that has arrived: when, and the first partition's fetch_offset. Reads without yielding. */
  fetchOffsets(): { at: number; offset: number }[];
  /** Forwards the fetches held since the first, and those to come. */
  release(): void;
  stop(): Promise<void>;
}

export async function startArrivalProxy(target: string): Promise<ArrivalProxy> {
  const dir = await tempDir('arrivals-');
  const log = join(dir.path, 'fetches.jsonl');
  const proc = spawn(process.execPath, ['-e', SCRIPT, target, log], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`proxy exited with ${code}`)));
    lines.once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
  });
  const fetchOffsets = () => {
    let text = '';
    try {
      text = readFileSync(log, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    // A line is whole once its newline is written.
    return text
      .split('\n')
      .slice(0, -1)
      .map((line) => JSON.parse(line) as { at: number; offset: number });
  };
  return {
    origin: `http://127.0.0.1:${port}`,
    fetchOffsets,
    release: () => void proc.stdin!.write('release\n'),
    stop: async () => {
      proc.kill('SIGKILL');
      await dir.remove();
    },
  };
}
