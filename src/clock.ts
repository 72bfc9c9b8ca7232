/** Milliseconds since the Unix epoch. Injectable so tests can move time (key expiry, cache age). */
export type Clock = () => number

export const systemClock: Clock = () => Date.now()
