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

/** The process logger; replaced at boot with the configured level. */
export let logger: Logger = createLogger(process.env.LOG_LEVEL ?? 'info')

export function setLogger(next: Logger) {
  logger = next
}
