import { accountCpu } from './aws-cpu.js';
import { chainStorageMs, requestTrace, type RequestTrace } from './aws-storage.js';

/**
 * The Lambda model of bench/aws.ts: per function, execution environments that each serve one
 * request at a time, up to a concurrency limit. A request takes an idle environment, or starts a new
 * one (a cold start: it waits `coldStartMs` before its handler runs), or, at the limit, waits for one
 * (where Lambda would answer 429 and the client retry: counted as `throttled`). An environment's
 * process state (`environment`) is made on its cold start and serves its warm invocations, so
 * requests in different environments share no queue or cache, only the stores. Every request runs
 * in a `requestTrace` context, kept in `traces` for the breakdown.
 *
 * Billed duration is modelled as on AWS, where an environment serves one request and has its CPU
 * share to itself: the cold start (as Lambda bills the init phase), plus the storage calls on the
 * request's critical path (their drawn times, `chainStorageMs`), plus the request's own CPU time
 * (bench/aws-cpu.ts) stretched by the function's share of a vCPU at its memory (a full vCPU at
 * `VCPU_MB`, proportionally less below: a 1,024 MB function runs a CPU-bound stretch 1.73 times
 * slower than one core of this machine, taken as equal to a Lambda vCPU); rounded up to the
 * millisecond, GB-seconds at `memoryMb`. Adding CPU and storage, rather than overlapping them,
 * bills CPU done while a call is in flight twice: an upper bound of that model. The measured wall
 * time (start of the request to the end of the buffered answer: here mostly this machine's CPU
 * queue, one process playing every Lambda) is kept beside it as `wallGbSeconds`.
 */
export interface LambdaOptions<E> {
  name: string;
  concurrency: number;
  coldStartMs: number;
  memoryMb: number;
  /**
   * An execution environment's process state, made on its cold start and kept for its warm
   * invocations, as Lambda keeps a process: bench/aws.ts composes its own services and app there
   * (its own commit queues and caches over the shared stores).
   */
  environment?: () => E;
}

export interface LambdaFigures {
  name: string;
  invocations: number;
  coldStarts: number;
  throttled: number;
  peakConcurrency: number;
  /** At the modelled billed duration (what the $ per GiB uses). */
  gbSeconds: number;
  /** At the measured wall duration. */
  wallGbSeconds: number;
}

/** Lambda's memory at which a function has the equivalent of one vCPU (docs/performance.md cites it). */
export const VCPU_MB = 1769;

/**
 * The process-wide CPU accounting every Lambda model's requests are charged by; a timer a request
 * set that fired (a back-off, a sequence gap's wait) joins its trace as a `Timer` span of the delay it
 * asked for, which the critical path counts as a storage call's drawn time.
 */
const cpu = accountCpu(requestTrace, (trace, createdMs, firedMs, delayMs) => {
  if (!trace.closed)
    trace.calls.push({
      op: 'Timer',
      startMs: createdMs - trace.startMs,
      endMs: firedMs - trace.startMs,
      drawnMs: delayMs,
    });
});

export interface FinishedTrace extends RequestTrace {
  /** Measured wall time. */
  durationMs: number;
  /** Modelled billed time (cold start + storage critical path + CPU at the function's vCPU share). */
  billedMs: number;
  /** The cold start in `billedMs` (0 when warm): without it, the request as a warm Lambda serves it. */
  coldMs: number;
  status: number;
}

/** A request's handler, run in the environment that serves it. */
type Handler<E> = (req: Request, environment: E) => Promise<Response>;

export class LambdaFunction<E = undefined> {
  private environments = 0;
  /** Environments between invocations: the most recently used is taken first. */
  private readonly idle: E[] = [];
  private busy = 0;
  private readonly waiting: ((environment: E) => void)[] = [];
  figures: LambdaFigures;
  traces: FinishedTrace[] = [];

  constructor(readonly options: LambdaOptions<E>) {
    this.figures = this.zero();
  }

  private zero(): LambdaFigures {
    return {
      name: this.options.name,
      invocations: 0,
      coldStarts: 0,
      throttled: 0,
      peakConcurrency: 0,
      gbSeconds: 0,
      wallGbSeconds: 0,
    };
  }

  /** Figures and traces since the last reset; environments stay warm. */
  reset(): void {
    this.figures = this.zero();
    this.traces = [];
  }

  async invoke(req: Request, handler: Handler<E>, route: string): Promise<Response> {
    const f = this.figures;
    f.invocations++;
    let cold = false;
    let environment: E;
    if (this.idle.length > 0) environment = this.idle.pop()!;
    else if (this.environments < this.options.concurrency) {
      this.environments++;
      cold = true;
      // Made before the cold start's wait: its CPU is the init phase's, which COLD_START_MS stands for.
      environment = this.options.environment ? this.options.environment() : (undefined as E);
    } else {
      f.throttled++;
      environment = await new Promise<E>((resolve) => this.waiting.push(resolve));
    }
    this.busy++;
    f.peakConcurrency = Math.max(f.peakConcurrency, this.busy);
    const trace: RequestTrace = { route, startMs: performance.now(), calls: [], cpuMs: 0 };
    try {
      if (cold) {
        f.coldStarts++;
        await new Promise((r) => setTimeout(r, this.options.coldStartMs));
      }
      // Lambda answers buffered (API Gateway and Function URLs in buffered mode): the body is read
      // here, in the request's context (its CPU is the request's).
      const [res, body] = await cpu.run(trace, async () => {
        const res = await handler(req, environment);
        return [res, await res.arrayBuffer()] as const;
      });
      const durationMs = performance.now() - trace.startMs;
      const share = Math.min(1, this.options.memoryMb / VCPU_MB);
      const coldMs = cold ? this.options.coldStartMs : 0;
      const billedMs = coldMs + chainStorageMs({ durationMs, calls: trace.calls }) + trace.cpuMs / share;
      const gb = this.options.memoryMb / 1024;
      f.gbSeconds += (Math.ceil(billedMs) / 1000) * gb;
      f.wallGbSeconds += (Math.ceil(durationMs) / 1000) * gb;
      trace.closed = true;
      this.traces.push({ ...trace, durationMs, billedMs, coldMs, status: res.status });
      const empty = body.byteLength === 0 && [101, 204, 205, 304].includes(res.status);
      return new Response(empty ? null : body, {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
      });
    } finally {
      this.busy--;
      const next = this.waiting.shift();
      if (next) next(environment);
      else this.idle.push(environment);
    }
  }
}
