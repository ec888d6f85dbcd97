import { requestTrace, type RequestTrace } from './aws-storage.js';

/**
 * The Lambda model of bench/aws.ts: per function, execution environments that each serve one
 * request at a time, up to a concurrency limit. A request takes an idle environment, or starts a new
 * one (a cold start: it waits `coldStartMs` before its handler runs), or, at the limit, waits for one
 * (where Lambda would answer 429 and the client retry: counted as `throttled`). Billed duration runs
 * from the environment's start of the request (the cold start included, as Lambda bills the init
 * phase) to the end of the buffered answer, rounded up to the millisecond; GB-seconds at
 * `memoryMb`. Every request runs in a `requestTrace` context, kept in `traces` for the breakdown.
 */
export interface LambdaOptions {
  name: string;
  concurrency: number;
  coldStartMs: number;
  memoryMb: number;
}

export interface LambdaFigures {
  name: string;
  invocations: number;
  coldStarts: number;
  throttled: number;
  peakConcurrency: number;
  gbSeconds: number;
}

export interface FinishedTrace extends RequestTrace {
  durationMs: number;
  status: number;
}

type Fetch = (req: Request) => Promise<Response>;

export class LambdaFunction {
  private environments = 0;
  private idle = 0;
  private busy = 0;
  private readonly waiting: (() => void)[] = [];
  figures: LambdaFigures;
  traces: FinishedTrace[] = [];

  constructor(readonly options: LambdaOptions) {
    this.figures = this.zero();
  }

  private zero(): LambdaFigures {
    return { name: this.options.name, invocations: 0, coldStarts: 0, throttled: 0, peakConcurrency: 0, gbSeconds: 0 };
  }

  /** Figures and traces since the last reset; environments stay warm. */
  reset(): void {
    this.figures = this.zero();
    this.traces = [];
  }

  async invoke(req: Request, handler: Fetch, route: string): Promise<Response> {
    const f = this.figures;
    f.invocations++;
    let cold = false;
    if (this.idle > 0) this.idle--;
    else if (this.environments < this.options.concurrency) {
      this.environments++;
      cold = true;
    } else {
      f.throttled++;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.busy++;
    f.peakConcurrency = Math.max(f.peakConcurrency, this.busy);
    const trace: RequestTrace = { route, startMs: performance.now(), calls: [] };
    try {
      if (cold) {
        f.coldStarts++;
        await new Promise((r) => setTimeout(r, this.options.coldStartMs));
      }
      const res = await requestTrace.run(trace, () => handler(req));
      // Lambda answers buffered (API Gateway and Function URLs in buffered mode): the body is read here.
      const body = await res.arrayBuffer();
      const durationMs = performance.now() - trace.startMs;
      f.gbSeconds += (Math.ceil(durationMs) / 1000) * (this.options.memoryMb / 1024);
      this.traces.push({ ...trace, durationMs, status: res.status });
      const empty = body.byteLength === 0 && [101, 204, 205, 304].includes(res.status);
      return new Response(empty ? null : body, {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
      });
    } finally {
      this.busy--;
      const next = this.waiting.shift();
      if (next) next();
      else this.idle++;
    }
  }
}
