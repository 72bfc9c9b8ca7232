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

export function setLogger(next: Logger) {
  logger = next
}
