import type { ClientRow } from './client-path.js';
/** What the bench measures, one row per cell; bench.ts fills them, render.ts prints them. */
import type { CostPerGib } from './cost.js';
import type { BodyFormat } from './formats.js';
import type { Acks } from './load.js';
import type { Percentiles } from './report.js';

export interface Cell {
  format: BodyFormat;
  acks: Acks;
  replicas: number;
  minInsync: number;
  partitions: number;
  batch: number;
}

/** What every measured cell reports. */
interface Measurement {
  recordsPerSec: number;
  mbPerSec: number;
  latency: Percentiles;
  serverCpuCores: number;
  loadCpuCores: number;
  /** CPU other work on the machine used meanwhile (not the server, not the load generator), cores. */
  otherCpuCores: number;
  errors: Record<string, number>;
  perGib: CostPerGib;
  peakRssBytes: number;
}

export interface ProduceRow extends Cell, Measurement {
  producers: number;
  objectPutsPerMiB: number;
  metadataWritesPerPartitionRequest: number;
  requestBytes: number;
}

export interface FetchRow extends Measurement {
  format: BodyFormat;
  replicas: number;
  minInsync: number;
  partitions: number;
  writtenInBatchesOf: number;
  consumers: number;
  responseBytes: number;
}

export interface CeilingRow
  extends Pick<
    Measurement,
    'recordsPerSec' | 'mbPerSec' | 'latency' | 'serverCpuCores' | 'loadCpuCores' | 'otherCpuCores'
  > {
  format: BodyFormat;
  kind: 'produce' | 'fetch';
  /** records/s of every run; the row shows the best. */
  runs: number[];
  batch: number;
}

export interface LatencyRun {
  peakRssBytes: number;
  offeredRecordsPerSec: number;
  achievedRecordsPerSec: number;
  produce: Percentiles;
  endToEnd?: Percentiles;
  errors: Record<string, number>;
  /** The load generator's CPU (producer, stamping and consumers), cores. */
  loadCpuCores: number;
  otherCpuCores: number;
}

/**
 * Latency of one cell at half its measured maximum, twice: producers alone (produce latency), and
 * producers with one consumer per partition tailing the log (end-to-end latency). Consumers cost
 * the server as much as producers, so the second load is half the pipeline's maximum,
 * 1 / (1 / produce max + 1 / fetch max), not half the produce maximum.
 */
export interface LatencyRow extends Cell {
  produceOnly: LatencyRun;
  withConsumer?: LatencyRun;
}

export interface Calibration {
  setup: string;
  recordsPerSec: number;
  loadCpuCores: number;
  serverCpuCores: number;
}

export interface Results {
  mode: string;
  machine: {
    cpus: number;
    cpuModel: string;
    memoryBytes: number;
    node: string;
    platform: string;
    loadAverageAtStart: number;
  };
  settings: {
    windowMs: number;
    warmupMs: number;
    producers: number;
    loadSetup: string;
    acksSupported: boolean;
    formats: BodyFormat[];
    [k: string]: unknown;
  };
  calibration: Calibration[];
  produce: ProduceRow[];
  fetch: FetchRow[];
  ceilings: CeilingRow[];
  latency: LatencyRow[];
  /** The client path (kafka-log perf with the client's defaults) on the batch server (bench/client-path.ts). */
  client: ClientRow[];
  /** Each format runs on its own server process: its VmHWM. */
  peakRssBytes: Partial<Record<BodyFormat, number>>;
}

export const sameCell = (a: Cell, b: Cell) =>
  a.format === b.format &&
  a.acks === b.acks &&
  a.replicas === b.replicas &&
  a.minInsync === b.minInsync &&
  a.partitions === b.partitions &&
  a.batch === b.batch;
export const errorText = (e: Record<string, number>) =>
  Object.keys(e).length > 0
    ? ` (errors: ${Object.entries(e)
        .map(([k, v]) => `${k} x${v}`)
        .join(', ')})`
    : '';
