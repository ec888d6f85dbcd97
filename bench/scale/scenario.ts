import type { LatencyProfile } from './profiles.js';
import { simulatedStorage, type SimulatedStorage, type TrafficSummary } from './simulated-storage.js';
import { VirtualTime } from './virtual-time.js';

/**
 * One scenario of the scale simulation (bench/scale.ts). Scenarios are plain modules listed in
 * bench/scale/scenarios.ts; each sets its data up with latency off, measures with it on, and
 * answers its own figures beside the storage traffic the harness counted.
 */
export interface Scenario {
  name: string;
  /** One line: what is simulated. */
  description: string;
  run(sim: Simulation): Promise<ScenarioFigures>;
}

/** Figures of a scenario's own, in the order to print them (name -> value). */
export type ScenarioFigures = Record<string, number | string>;

export interface Simulation {
  time: VirtualTime;
  /** Storage with latency and counts; `replicaStores` object stores (RF 2 needs 2). */
  storage(replicaStores: number): SimulatedStorage;
  quick: boolean;
  profile: LatencyProfile;
  /** The cluster's feature level the product's code runs at (`--feature-level`; default the newest, as a new cluster). */
  featureLevel: number;
  log(msg: string): void;
}

export interface ScenarioResult {
  scenario: string;
  description: string;
  profile: string;
  quick: boolean;
  featureLevel: number;
  figures: ScenarioFigures;
  traffic: TrafficSummary;
  simulatedSeconds: number;
  cpuSeconds: number;
}

/** Simulated time starts here (a fixed instant, so runs compare). */
export const SIMULATION_START = Date.UTC(2026, 0, 1);

export async function runScenario(
  scenario: Scenario,
  options: { quick: boolean; profile: LatencyProfile; featureLevel: number; log?: (msg: string) => void },
): Promise<ScenarioResult> {
  const time = new VirtualTime(SIMULATION_START);
  let sim: SimulatedStorage | undefined;
  const simulation: Simulation = {
    time,
    storage: (replicaStores) => {
      sim = simulatedStorage(time, options.profile, replicaStores);
      return sim;
    },
    quick: options.quick,
    profile: options.profile,
    featureLevel: options.featureLevel,
    log: options.log ?? (() => {}),
  };
  const cpu = process.cpuUsage();
  const figures = await time.run(scenario.run(simulation));
  const used = process.cpuUsage(cpu);
  if (!sim) throw new Error(`scenario ${scenario.name} made no storage`);
  return {
    scenario: scenario.name,
    description: scenario.description,
    profile: options.profile.name,
    quick: options.quick,
    featureLevel: options.featureLevel,
    figures,
    traffic: sim.traffic.summary(),
    simulatedSeconds: (time.now() - SIMULATION_START) / 1000,
    cpuSeconds: (used.user + used.system) / 1e6,
  };
}
