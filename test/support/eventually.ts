// Waiting on a condition instead of on the clock (docs/development.md "Tests"): `fn` is called until
// it returns without throwing (and, for a boolean, returns true); its value is returned. When the
// time is up, the last error (or the last false) fails the test, so the message names what was
// awaited rather than "timed out".

export interface EventuallyOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number
  /** Pause between two tries (default 20 ms). */
  intervalMs?: number
  /** Named in the failure when `fn` returns false (an assertion names itself). */
  what?: string
}

export async function eventually<T>(
  fn: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 20, what }: EventuallyOptions = {},
): Promise<Exclude<T, false>> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await fn()
      if (value !== false) return value as Exclude<T, false>
      last = new Error(`still not true after ${timeoutMs} ms: ${what ?? fn.toString()}`)
    } catch (e) {
      last = e
    }
    if (Date.now() >= deadline) throw last
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

/**
 * Waits until the response cache has been emptied `times` more times since `generation` (its
 * `ticket()` then): an import's NOTIFY reaches the gateway on its own schedule (on PostgreSQL, a
 * moment after the import's answer).
 */
export function cacheClearedSince(cache: { ticket(): number }, generation: number, times = 1): Promise<true> {
  return eventually(() => cache.ticket() >= generation + times, { what: `the response cache emptied ${times} more time(s) since ticket ${generation}` })
}

/**
 * `read()` until its value satisfies `ok`, that value returned; fails naming `what` and the last
 * value read (the polling form the chain-source suites use: a block, a status, a row count).
 */
export async function valueWhen<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const { value } = await eventually(
    async () => {
      const v = await read()
      if (!ok(v)) throw new Error(`${what}: not reached in ${timeoutMs} ms; last: ${JSON.stringify(v)}`)
      return { value: v }
    },
    { timeoutMs, intervalMs: 25 },
  )
  return value
}
