import { createHash, timingSafeEqual } from 'node:crypto'

/** Constant-time comparison of a presented bearer token with the configured one. */
export function bearerMatches(header: string | undefined | null, expected: string): boolean {
  const match = /^Bearer[ ]+(.+)$/i.exec(header ?? '')
  if (!match?.[1]) return false
  const a = createHash('sha256').update(match[1].trim()).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b)
}
