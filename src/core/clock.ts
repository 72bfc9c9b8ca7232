/** The current time. Injectable so tests can move it (key expiry, key-cache age, session-token checks). */
export type Clock = () => Date

export const systemClock: Clock = () => new Date()
