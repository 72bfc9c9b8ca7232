import pino from 'pino'
import { MAX_ECHO, withoutLongEchoes } from './errors.js'
import { traceFields } from './telemetry.js'

// Secrets never reach logs: headers that carry them and body fields that may hold them are redacted.
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-admin-token"]',
  'headers.authorization',
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'digest',
  '*.digest',
]

/**
 * Errors as logged. Prisma's messages quote the whole call with its argument values ("Invalid
 * `prisma.vault.findMany()` invocation: { where: { … } }"), PostgreSQL's repeat the value it could
 * not read (`invalid input syntax for type uuid: "…"`), and drivers attach the statement, its
 * parameters and details (`meta`, `detail`, `where`): all of which can come from a request (a
 * pasted key, a forged cursor). An error is logged as its type, codes, a message of at most
 * MAX_ECHO characters without long client values (withoutLongEchoes, src/core/errors.ts), its stack
 * frames, and its cause the same way; nothing else of it.
 */
function errorForLog(err: unknown, depth = 0): unknown {
  if (!(err instanceof Error)) return typeof err === 'string' ? cut(withoutLongEchoes(err)) : err
  const e = err as Error & Record<string, unknown>
  let message = e.message
  if (/Invalid `[^`]*` invocation/.test(message)) {
    const last = message.trim().split('\n').pop()?.trim() ?? ''
    message = `Invalid Prisma call: ${last.replace(/provided [^.]*\./, (m) => m.replace(/`[^`]*`/g, '`…`'))}`
  }
  const out: Record<string, unknown> = { type: e.constructor?.name ?? e.name, message: cut(withoutLongEchoes(message)) }
  for (const key of ['code', 'kind', 'errno', 'syscall'] as const) {
    const value = e[key]
    if (typeof value === 'number' || (typeof value === 'string' && value.length <= 64)) out[key] = value
  }
  // Prisma's P2010 names the driver's failure in meta.driverAdapterError (e.g. ConnectionClosed).
  const adapterKind = (e.meta as { driverAdapterError?: { cause?: { kind?: unknown } } } | undefined)?.driverAdapterError?.cause?.kind
  if (typeof adapterKind === 'string') out.kind = adapterKind.slice(0, 64)
  // The stack begins with the message (all its lines): keep the frames only.
  if (typeof e.stack === 'string')
    out.stack = e.stack
      .split('\n')
      .filter((l) => /^\s+at /.test(l))
      .join('\n')
  if (e.cause !== undefined && depth < 3) out.cause = errorForLog(e.cause, depth + 1)
  return out
}

const cut = (message: string) => (message.length > MAX_ECHO ? `${message.slice(0, MAX_ECHO)}…` : message)

/** Identical warnings and errors (same level, message and error) are written at most once per this many milliseconds. */
export const LOG_REPEAT_WINDOW_MS = 10_000

/**
 * During an outage every request fails the same way: one line per LOG_REPEAT_WINDOW_MS for each
 * warning or error message (and error it reports), the next one carrying `suppressed`, the number
 * of lines left out since.
 * Levels below warn (the request lines) are never held back.
 */
function repeatLimiter(now: () => number = Date.now) {
  const last = new Map<string, { at: number; suppressed: number }>()
  return function logMethod(this: pino.Logger, args: unknown[], method: (...a: unknown[]) => void, level: number) {
    if (level < 40) return method.apply(this, args)
    const message = typeof args[0] === 'string' ? args[0] : typeof args[1] === 'string' ? args[1] : ''
    // Identical means the same error too: two different failures under one message are both written.
    const err = args[0] instanceof Error ? args[0] : (args[0] as { err?: unknown } | null)?.err
    const cause = err instanceof Error ? `${err.name}\u0000${err.message.slice(0, MAX_ECHO)}` : ''
    const key = `${level}\u0000${message}\u0000${cause}`
    const seen = last.get(key)
    const at = now()
    if (seen && at - seen.at < LOG_REPEAT_WINDOW_MS) {
      seen.suppressed++
      return
    }
    if (last.size >= 1000) last.clear()
    last.set(key, { at, suppressed: 0 })
    if (seen?.suppressed) {
      const [first, ...rest] = args
      const fields = first !== null && typeof first === 'object' && !(first instanceof Error) ? first : first instanceof Error ? { err: first } : undefined
      return fields ? method.apply(this, [{ ...fields, suppressed: seen.suppressed }, ...rest]) : method.apply(this, [{ suppressed: seen.suppressed }, ...args])
    }
    return method.apply(this, args)
  }
}

/** `now`: the repeat limiter's clock (tests). */
export function createLogger(level: string, destination?: pino.DestinationStream, { now }: { now?: () => number } = {}) {
  return pino(
    {
      level,
      base: { service: 'vaultgate' },
      // `"level":"info"`, not pino's 30: what log collectors and people read without a table.
      formatters: { level: (label) => ({ level: label }) },
      // The active trace's ids, when OpenTelemetry is on (src/core/telemetry.ts).
      mixin: traceFields,
      redact: { paths: redactPaths, censor: '[redacted]' },
      serializers: { err: (e: unknown) => errorForLog(e) },
      hooks: { logMethod: repeatLimiter(now) },
    },
    destination,
  )
}

export type Logger = pino.Logger

/**
 * The process logger; replaced at boot with the configured level. Until then, a LOG_LEVEL pino does
 * not know must not throw here, at import: the configuration reports it in one line.
 */
const startLevel = process.env.LOG_LEVEL ?? 'info'
export let logger: Logger = createLogger(startLevel === 'silent' || Object.hasOwn(pino.levels.values, startLevel) ? startLevel : 'info')
let chosen = false

/** Replaces the process logger (the CLI's at boot; a test's own to read what is logged). */
export function setLogger(next: Logger) {
  logger = next
  chosen = true
}

/**
 * Gives the process logger the configured level unless a logger was chosen already (the CLI sets
 * its own at boot; a test may set one to capture lines). An app made in process (createApp) so
 * honours LOG_LEVEL too.
 */
export function useLogLevel(level: string) {
  if (!chosen) logger = createLogger(level)
}
