import pino from 'pino'

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
 * Errors as logged: Prisma's messages quote the whole call with its argument values ("Invalid
 * `prisma.vault.findMany()` invocation: { where: { … } }"), and those values can come from a
 * request (a pasted key, a forged cursor). Only the sentence saying what was wrong is kept, and no
 * message is longer than MAX_MESSAGE characters.
 */
const MAX_MESSAGE = 300
function errorForLog(err: unknown) {
  const out = pino.stdSerializers.err(err as Error) as Record<string, unknown>
  if (typeof out.message === 'string') {
    let message = out.message
    if (/Invalid `[^`]*` invocation/.test(message)) {
      const last = message.trim().split('\n').pop()?.trim() ?? ''
      message = `Invalid Prisma call: ${last.replace(/provided [^.]*\./, (m) => m.replace(/`[^`]*`/g, '`…`'))}`
    }
    out.message = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message
    // The stack begins with the message (all its lines): keep the frames only.
    if (typeof out.stack === 'string')
      out.stack = out.stack
        .split('\n')
        .filter((l) => /^\s+at /.test(l))
        .join('\n')
  }
  return out
}

export function createLogger(level: string, destination?: pino.DestinationStream) {
  return pino({ level, base: { service: 'vaultgate' }, redact: { paths: redactPaths, censor: '[redacted]' }, serializers: { err: errorForLog } }, destination)
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
