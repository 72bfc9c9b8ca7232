import { Decimal as DecimalJs } from 'decimal.js'

// Money never passes through a JS number. 100 significant digits covers NUMERIC(78,18) products
// (78 + 78 digits would not fit, but 60 integer digits × a price of ~20 digits does) before the
// single rounding step; ROUND_HALF_UP in decimal.js rounds half away from zero.
export const Decimal = DecimalJs.clone({ precision: 200, rounding: DecimalJs.ROUND_HALF_UP, toExpNeg: -100, toExpPos: 100 })
export type Decimal = InstanceType<typeof Decimal>

/** The fractional digits of NUMERIC(78,18), and of every derived amount. */
export const AMOUNT_SCALE = 18
const MAX_INTEGER_DIGITS = 60

/** Anything decimal-like: decimal.js / Prisma.Decimal instances, or strings. */
export type DecimalLike = { toFixed(): string } | string

/** Already in the form formatAmount gives (the common case: the database's text, a formatted value). */
const CANONICAL = /^(?!-0$)-?(0|[1-9]\d*)(\.\d*[1-9])?$/

/** Plain decimal notation, no exponent, no trailing fractional zeros, "0" never "-0" (decisions §3). */
export function formatAmount(value: DecimalLike): string {
  const s = typeof value === 'string' ? value : value.toFixed()
  // A series answers hundreds of amounts: most need no decimal.js round trip.
  if (CANONICAL.test(s)) return s
  const d = new Decimal(s)
  if (d.isZero()) return '0'
  return d.toFixed()
}

/** Rounds once, half away from zero, to 18 fractional digits, then formats. */
export function formatDerivedAmount(value: Decimal): string {
  return formatAmount(value.toDecimalPlaces(AMOUNT_SCALE, Decimal.ROUND_HALF_UP))
}

const AMOUNT_PATTERN = /^-?\d+(\.\d+)?$/

/**
 * Parses an amount string from input (import documents, arguments). Returns an error sentence
 * instead of throwing, so callers can name the offending path.
 */
export function parseAmount(input: unknown, { allowNegative = false } = {}): { ok: true; value: string } | { ok: false; error: string } {
  if (typeof input !== 'string') return { ok: false, error: 'must be a decimal string such as "1.5"' }
  if (!AMOUNT_PATTERN.test(input)) return { ok: false, error: 'must be a plain decimal string (digits, optional "." and fraction, no exponent)' }
  if (!allowNegative && input.startsWith('-')) return { ok: false, error: 'must not be negative' }
  const [int = '', frac = ''] = input.replace(/^-/, '').split('.')
  if (frac.replace(/0+$/, '').length > AMOUNT_SCALE) return { ok: false, error: `has more than ${AMOUNT_SCALE} fractional digits` }
  if (int.replace(/^0+(?=\d)/, '').length > MAX_INTEGER_DIGITS) return { ok: false, error: `has more than ${MAX_INTEGER_DIGITS} integer digits` }
  return { ok: true, value: formatAmount(input) }
}
