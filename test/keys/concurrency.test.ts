import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testBackend } from '../support/db.js'
import { createKeysTestApp, type KeysTestApp } from '../support/keys.js'

// Spec §8: one active key per account, under any interleaving of creates.

const W = '0xcccccccccccccccccccccccccccccccccccccccc'
const N = 100

describe(`100 concurrent creates for one wallet (${testBackend})`, () => {
  let t: KeysTestApp
  beforeAll(async () => {
    // The per-wallet rate limit would refuse most of the burst: this test is about interleavings.
    t = await createKeysTestApp({ allowlist: [W], env: { RATE_LIMIT_KEYS_PER_MINUTE: '0' } })
  })
  afterAll(() => t.close())

  it('all succeed, one key is active — the last committed — and only it verifies', async () => {
    const headers = { ...(await t.session([W])), 'content-type': 'application/json' }
    const resolved: string[] = []
    const responses = await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const res = await t.request('/v1/apiKey', { method: 'POST', headers, body: JSON.stringify({ keyPrefix: `c${i}` }) })
        const body = await res.json()
        if (res.status === 200) resolved.push(body.data.id)
        return { status: res.status, body }
      }),
    )
    expect(responses.map((r) => r.status)).toEqual(Array(N).fill(200))
    const keys = responses.map((r) => r.body.data as { id: string; apiKey: string })
    expect(new Set(keys.map((k) => k.id)).size).toBe(N)

    const active = await t.db.prisma.apiKey.findMany({ where: { wallet: W, revokedAt: null }, select: { id: true } })
    expect(active).toHaveLength(1)

    // Commit order: the audit trail is written in the transactions, so its ids follow the commits.
    const created = await t.db.prisma.keyEvent.findMany({ where: { action: 'created' }, orderBy: { id: 'asc' }, select: { keyId: true } })
    expect(created).toHaveLength(N)
    const lastCommitted = created.at(-1)!.keyId
    expect(active[0]!.id).toBe(lastCommitted)
    expect(resolved.at(-1)).toBe(lastCommitted)
    expect(await t.db.prisma.keyEvent.count({ where: { action: 'revoked', reason: 'replaced' } })).toBe(N - 1)

    const verdicts = await Promise.all(keys.map(async (k) => ({ id: k.id, data: (await t.verify(k.apiKey)).body.data })))
    const winners = verdicts.filter((v) => v.data.active)
    expect(winners.map((v) => v.id)).toEqual([lastCommitted])
    for (const v of verdicts.filter((x) => !x.data.active))
      expect(v.data).toEqual({
        active: false,
        wallet: W,
        keyId: v.id,
        expiresAtMs: expect.any(Number),
        expiresInMs: expect.any(Number),
        reason: 'revoked',
        rateLimit: { limit: 1200, remaining: 1199, resetMs: expect.any(Number) },
      })
    expect((await t.get(W)).body.data.id).toBe(lastCommitted)
  })
})
