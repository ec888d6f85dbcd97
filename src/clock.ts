/** Time as an injected dependency, so tests can drive expiry, retention and timers deterministically. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
