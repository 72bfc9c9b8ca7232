import { z } from 'zod'

// The two value formats every outward shape shares (decisions.md §3): REST bodies (src/rest/wire.ts
// registers these very schemas as the OpenAPI components `Amount` and `Timestamp`) and webhook
// payloads (src/webhooks/events.ts), which may not import the REST layer.

export const AmountString = z
  .string()
  .regex(/^-?(0|[1-9]\d*)(\.\d*[1-9])?$/)
  .meta({
    description: 'An exact decimal amount in plain notation: "." separator, no exponent, no thousands separators, no trailing fractional zeros.',
    examples: ['1.5', '0', '1234567.000000000000000001'],
  })

export const TimestampString = z.iso
  .datetime({ precision: 3 })
  .meta({ description: 'RFC 3339 in UTC with milliseconds.', examples: ['2026-11-21T12:00:00.000Z'] })

/** A comma-separated list, blanks dropped (settings, X-Forwarded-For, CLI arguments). */
export const commaList = (text: string | null | undefined): string[] =>
  (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)

/** A JSON object: not null, not an array (bodies, sources files and token claims are read through it). */
export const isJsonObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
