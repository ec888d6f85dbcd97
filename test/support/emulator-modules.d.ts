// Just enough typing for the in-process emulators used by test/support/emulators.ts; neither
// package ships its own types.

declare module 's3rver' {
  import type { AddressInfo } from 'node:net';

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs?: Array<string | Buffer> }[];
  }

  export default class S3rver {
    constructor(options?: S3rverOptions);
    run(): Promise<AddressInfo>;
    close(): Promise<void>;
  }
}

declare module 'dynalite' {
  import type { Server } from 'node:http';

  interface DynaliteOptions {
    path?: string;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
    verbose?: boolean;
    debug?: boolean;
  }

  export default function dynalite(options?: DynaliteOptions): Server;
}
