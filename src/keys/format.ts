import { createHash, randomBytes } from 'node:crypto'

/** Spec §4 rule 1 and docs/spec/decisions.md §1. */
export const KEY_PREFIX_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/
export const DEFAULT_KEY_PREFIX = 'vaultgate'
export const KEY_LIFETIME_MS = 30 * 24 * 60 * 60 * 1000
export const SECRET_BYTES = 32

// Bitcoin's base58 alphabet: no `_` (the raw key splits at its last `_`), no look-alikes (0/O, I/l).
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

/** 58^44 > 2^256: every 32-byte secret fits in exactly 44 base58 digits. */
export const SECRET_LENGTH = 44

/** A raw key as issued: prefix, `_`, 44 base58 digits holding 32 random bytes. */
export const RAW_KEY_PATTERN = /^([A-Za-z0-9][A-Za-z0-9_-]{0,31})_([1-9A-HJ-NP-Za-km-z]{44})$/

/** Fixed-width base58 (left-padded with the zero digit "1"), so every key has the same length. */
export function base58(bytes: Uint8Array, width: number): string {
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  let out = ''
  while (n > 0n) {
    out = BASE58[Number(n % 58n)] + out
    n /= 58n
  }
  if (out.length > width) throw new RangeError(`${bytes.length} bytes do not fit in ${width} base58 digits`)
  return out.padStart(width, '1')
}

/** A key's label: at most this many code points (the rest of its rule: src/keys/inputs.ts). */
export const KEY_NAME_MAX = 64

export function generateRawKey(prefix: string): string {
  return `${prefix}_${base58(randomBytes(SECRET_BYTES), SECRET_LENGTH)}`
}

/**
 * SHA-256 (hex) of the whole raw key. No pepper: the secret carries 256 random bits, so a stolen
 * digest table cannot be brute-forced either way, and a plain hash keeps keys valid across
 * instances without sharing another secret.
 */
export function digestOf(rawKey: string): string {
  return createHash('sha256').update(rawKey, 'utf8').digest('hex')
}

/** True when the string has the shape of a key we issue (checked before any lookup). */
export function looksLikeRawKey(value: string): boolean {
  return value.length <= 80 && RAW_KEY_PATTERN.test(value)
}
