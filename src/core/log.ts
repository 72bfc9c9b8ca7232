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

export function createLogger(level: string, destination?: pino.DestinationStream) {
  return pino({ level, base: { service: 'vaultgate' }, redact: { paths: redactPaths, censor: '[redacted]' } }, destination)
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
