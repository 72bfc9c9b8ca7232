import { createHash, timingSafeEqual } from 'node:crypto'

const sha256 = (text: string) => createHash('sha256').update(text).digest()

// The configured tokens' digests (a process has one admin and one internal token; tests a few more).
const expectedDigests = new Map<string, Buffer>()

/** Constant-time comparison of a presented bearer token with the configured one. */
export function bearerMatches(header: string | undefined | null, expected: string): boolean {
  const match = /^Bearer[ ]+(.+)$/i.exec(header ?? '')
  if (!match?.[1]) return false
  let digest = expectedDigests.get(expected)
  if (!digest) {
    if (expectedDigests.size >= 64) expectedDigests.clear()
    digest = sha256(expected)
    expectedDigests.set(expected, digest)
  }
  return timingSafeEqual(sha256(match[1].trim()), digest)
}
