import type { Readable } from 'node:stream';

/** What a command gets: output streams, stdin, the environment, and a signal for Ctrl-C. */
export interface Context {
  out: (line: string) => void;
  err: (line: string) => void;
  stdin: Readable;
  env: NodeJS.ProcessEnv;
  /** Aborted on SIGINT/SIGTERM: long-running commands stop cleanly. */
  signal: AbortSignal;
}
