import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from './api.js';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | Error | undefined;
  reload: () => void;
}

/** Loads with `load`, again every `everyMs` (0: once) and on reload(); keeps the last good data. */
export function usePoll<T>(load: () => Promise<T>, everyMs: number, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const d = await loadRef.current();
        if (!live) return;
        setData(d);
        setError(undefined);
      } catch (e) {
        if (live) setError(e as Error);
      }
      if (live && everyMs > 0) timer = setTimeout(run, everyMs);
    };
    void run();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [...deps, tick, everyMs]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload };
}

/** The last `max` samples of a series, as uPlot wants them: [times in seconds, values]. */
export function useSeries(max = 60): { series: [number[], number[]]; push: (t: number, v: number) => void } {
  const [series, setSeries] = useState<[number[], number[]]>([[], []]);
  const push = useCallback(
    (t: number, v: number) => setSeries(([ts, vs]) => [[...ts, t].slice(-max), [...vs, v].slice(-max)]),
    [max],
  );
  return { series, push };
}
