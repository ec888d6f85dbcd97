/**
 * Time: the clock as an injected dependency, so tests can drive expiry, retention and timers
 * deterministically, and durations as Kafka's tools and configs write them.
 */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/**
 * The ISO-8601 durations Java's Duration.parse reads in the form Kafka documents (PnDTnHnMn.nS,
 * none negative), in ms; undefined when it is not one. One parser for the tools' --by-duration and
 * share.auto.offset.reset's by_duration.
 */
export function parseIsoDuration(text: string): number | undefined {
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i.exec(text);
  if (!m || /^P$|T$/i.test(text)) return undefined;
  const [, d = '0', h = '0', min = '0', sec = '0'] = m;
  return Math.round(((Number(d) * 24 + Number(h)) * 60 + Number(min)) * 60_000 + Number(sec) * 1000);
}
