/**
 * An HTTP proxy in a child process that notes when each `records:fetch` request reaches it, by its
 * own clock (the test's too: one machine). A test whose thread is kept busy can learn afterwards
 * what left its process while it was.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const SCRIPT = `
const http = require('node:http');
const target = new URL(process.argv[1]);
const agent = new http.Agent({ keepAlive: true });
http.createServer((req, res) => {
  const at = Date.now();
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    if (req.url.endsWith('/records:fetch')) {
      const offset = JSON.parse(body).topics[0].partitions[0].fetch_offset;
      process.stdout.write(JSON.stringify({ at, offset }) + '\\n');
    }
    const options = { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent };
    const up = http.request(options, (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
    up.on('error', () => res.destroy());
    up.end(body);
  });
}).listen(0, '127.0.0.1', function () { process.stdout.write(JSON.stringify({ port: this.address().port }) + '\\n'); });
`;

export interface ArrivalProxy {
  origin: string;
  /** Each fetch that arrived: when, and the first partition's fetch_offset. */
  fetchOffsets(): { at: number; offset: number }[];
  stop(): void;
}

export async function startArrivalProxy(target: string): Promise<ArrivalProxy> {
  const proc = spawn(process.execPath, ['-e', SCRIPT, target], { stdio: ['ignore', 'pipe', 'inherit'] });
  const arrivals: { at: number; offset: number }[] = [];
  const lines = createInterface({ input: proc.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`proxy exited with ${code}`)));
    lines.on('line', (line) => {
      const msg = JSON.parse(line) as { port?: number; at?: number; offset?: number };
      if (msg.port !== undefined) resolve(msg.port);
      else arrivals.push({ at: msg.at!, offset: msg.offset! });
    });
  });
  return {
    origin: `http://127.0.0.1:${port}`,
    fetchOffsets: () => [...arrivals],
    stop: () => proc.kill('SIGKILL'),
  };
}
