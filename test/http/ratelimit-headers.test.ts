import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.js'
import { importDocument } from '../../src/importer/write.js'
import { testBackend } from '../support/db.js'
import { createKeysTestApp, type KeysTestApp } from '../support/keys.js'
import { recordSql } from '../support/sql.js'
import { vaultDoc } from '../support/wallet-data.js'
import { cacheClearedSince } from '../support/eventually.js'

// docs/spec/decisions.md §13: successful public answers carry the IETF RateLimit-Policy and
// RateLimit fields (draft-ietf-httpapi-ratelimit-headers) of the client's per-IP budget, whichever
// path answers them (the routes, or a cache hit before them), and each client sees its own.

const LIMIT = 5

/** A request from `ip` (TRUST_PROXY=1: the address the proxy saw is the last X-Forwarded-For entry). */
const from = (ip: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) => {
  const headers: Record<string, string> = { 'x-forwarded-for': ip, ...init.headers }
  if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body))
  return new Request(`http://vaultgate.test${path}`, { method: init.method, headers, body: init.body })
}
const fields = (res: Response) => [res.status, res.headers.get('ratelimit-policy'), res.headers.get('ratelimit')]
const remaining = (res: Response) => Number(/;r=(\d+);/.exec(res.headers.get('ratelimit') ?? '')?.[1])

describe(`RateLimit headers on public answers (${testBackend})`, () => {
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({ env: { RESPONSE_CACHE_TTL_MS: '60000', RATE_LIMIT_PUBLIC_PER_MINUTE: String(LIMIT), TRUST_PROXY: '1' } })
    const generation = t.app.responseCache.ticket()
    await importDocument({ vaults: [vaultDoc('rl-a', { name: 'RL A' })] }, t.db.prisma)
    await cacheClearedSince(t.app.responseCache, generation)
  })
  afterAll(() => t.close())

  it('counts down on reads, cached or not, in the draft syntax, and says 0 left on the 429', async () => {
    const ip = '198.51.100.1'
    const policy = `"ip";q=${LIMIT};w=60`
    const seen = []
    for (let i = 0; i < LIMIT; i++) {
      const res = await t.app.fetch(from(ip, '/v1/vaults/rl-a'))
      seen.push(fields(res))
      expect(res.headers.get('ratelimit')).toMatch(/^"ip";r=\d;t=(60|59)$/)
    }
    expect(seen.map(([status, p]) => [status, p])).toEqual(Array(LIMIT).fill([200, policy]))
    expect(seen.map(([, , r]) => /r=(\d)/.exec(r as string)![1])).toEqual(['4', '3', '2', '1', '0'])
    const limited = await t.app.fetch(from(ip, '/v1/vaults/rl-a'))
    expect([limited.status, limited.headers.get('ratelimit-policy'), limited.headers.get('retry-after')]).toEqual([429, policy, expect.stringMatching(/^\d+$/)])
    expect(limited.headers.get('ratelimit')).toMatch(/^"ip";r=0;t=\d+$/)
  })

  it('gives each client its own numbers on a shared cache hit, and stores none of them in the entry', async () => {
    // A fills the cache and spends three requests; B's first answer is a hit answered before the routes.
    for (let i = 0; i < 3; i++) await t.app.fetch(from('198.51.100.2', '/v1/vaults/rl-a'))
    const { result: hit, statements } = await recordSql(() => t.app.fetch(from('198.51.100.3', '/v1/vaults/rl-a')))
    expect(statements).toEqual([])
    expect([hit.status, remaining(hit)]).toEqual([200, LIMIT - 1])
    const again = await t.app.fetch(from('198.51.100.2', '/v1/vaults/rl-a'))
    expect(remaining(again)).toBe(LIMIT - 4)
    // A revalidation (304) carries them too.
    const notModified = await t.app.fetch(from('198.51.100.3', '/v1/vaults/rl-a', { headers: { 'if-none-match': hit.headers.get('etag')! } }))
    expect([notModified.status, remaining(notModified)]).toEqual([304, LIMIT - 2])
  })

  it('puts them on GraphQL answers (a cache hit too) and on uncached per-wallet reads, not on errors or outside the public API', async () => {
    const query = (ip: string) =>
      from(ip, '/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ vault(id: "rl-a") { id name } }' }),
      })
    expect(remaining(await t.app.fetch(query('198.51.100.4')))).toBe(LIMIT - 1)
    expect(remaining(await t.app.fetch(query('198.51.100.4')))).toBe(LIMIT - 2)
    const wallet = await t.app.fetch(from('198.51.100.4', '/v1/users/0x1900000000000000000000000000000000000009/redeems'))
    expect([wallet.status, remaining(wallet)]).toEqual([200, LIMIT - 3])
    // An error answer spends the budget but does not advertise it.
    const missing = await t.app.fetch(from('198.51.100.4', '/v1/vaults/nope'))
    expect(fields(missing)).toEqual([404, null, null])
    const next = await t.app.fetch(from('198.51.100.4', '/v1/vaults/rl-a'))
    expect(remaining(next)).toBe(0)
    for (const path of ['/healthz', '/metrics', '/openapi.json']) expect(fields(await t.app.fetch(from('198.51.100.4', path))).slice(1)).toEqual([null, null])
  })

  it('are absent when the public limit is off', async () => {
    const off = createApp({ config: { ...t.config, rateLimits: { ...t.config.rateLimits, publicPerMinute: 0 } }, db: t.db })
    try {
      await off.ready
      expect(fields(await off.fetch(from('198.51.100.5', '/v1/vaults/rl-a')))).toEqual([200, null, null])
    } finally {
      await off.close()
    }
  })
})
