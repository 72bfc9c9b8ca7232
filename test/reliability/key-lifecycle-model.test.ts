import { randomBytes } from 'node:crypto'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KEY_LIFETIME_MS } from '../../src/keys/format.js'
import { testBackend } from '../support/db.js'
import { ADMIN_TOKEN, createKeysTestApp, manualClock, type KeysTestApp } from '../support/keys.js'
import { runs } from '../support/fuzz.js'
import { Tally } from '../support/report.js'

// Random sequences of key operations over a few wallets, each answer compared with what a small
// in-memory model of the rules (spec §4, decisions.md §7) says it must be.

type RevokeReason = 'replaced' | 'user' | 'expired' | 'allowlist_removed'
interface KeyModel {
  id: string
  apiKey: string
  wallet: string
  createdAt: number
  expiresAt: number
  revoked: RevokeReason | null
}
interface Model {
  now: number
  listed: Record<string, boolean>
  keys: KeyModel[]
}
interface Real {
  t: KeysTestApp
  advance(ms: number): void
  wallets: string[]
  tally: Tally
}

const unrevoked = (m: Model, wallet: string) => m.keys.find((k) => k.wallet === wallet && k.revoked === null)
/** revokeCurrentKey: a key that has already expired is closed as `expired`, whatever the trigger. */
function revokeCurrent(m: Model, wallet: string, reason: RevokeReason): KeyModel | undefined {
  const k = unrevoked(m, wallet)
  if (k) k.revoked = k.expiresAt <= m.now ? 'expired' : reason
  return k
}
// Usage is written only when the app flushes it (never during these sequences): lastUsedAtMs stays null.
const record = (k: KeyModel, now: number) => ({
  id: k.id,
  keyPrefix: k.apiKey.slice(0, k.apiKey.lastIndexOf('_')),
  createdAtMs: k.createdAt,
  expiresAtMs: k.expiresAt,
  revokedAtMs: null,
  name: null,
  allowedCidrs: [],
  lastUsedAtMs: null,
  expiresInMs: k.expiresAt - now,
})
// The limits are off in this suite (RATE_LIMIT_VERIFY_PER_MINUTE=0): no budget to report.
const RATE = null
const notWhitelisted = {
  status: 'error',
  error: { code: 'not_whitelisted', message: 'This wallet is not on the allowlist.' },
  server_time_ms: expect.any(Number),
}
const ok = (data: unknown) => ({ status: 'ok', data, server_time_ms: expect.any(Number) })

class Create implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly w: number,
    readonly prefix: string | undefined,
  ) {}
  check = () => true
  async run(m: Model, r: Real) {
    const wallet = r.wallets[this.w]!
    const res = await r.t.create(wallet, this.prefix === undefined ? {} : { keyPrefix: this.prefix })
    r.tally.add(`create ${res.status}`)
    if (!m.listed[wallet]) {
      expect(res.body).toEqual(notWhitelisted)
      return
    }
    const prefix = this.prefix ?? 'vaultgate'
    expect(res.status).toBe(200)
    expect(res.body).toEqual(
      ok({
        id: expect.any(String),
        keyPrefix: prefix,
        createdAtMs: m.now,
        expiresAtMs: m.now + KEY_LIFETIME_MS,
        revokedAtMs: null,
        name: null,
        allowedCidrs: [],
        lastUsedAtMs: null,
        expiresInMs: KEY_LIFETIME_MS,
        apiKey: expect.stringMatching(new RegExp(`^${prefix}_[^_]{32,}$`)),
      }),
    )
    revokeCurrent(m, wallet, 'replaced')
    m.keys.push({ id: res.body.data.id, apiKey: res.body.data.apiKey, wallet, createdAt: m.now, expiresAt: m.now + KEY_LIFETIME_MS, revoked: null })
  }
  toString = () => `create(w${this.w}${this.prefix === undefined ? '' : `, ${this.prefix}`})`
}

class Inspect implements fc.AsyncCommand<Model, Real> {
  constructor(readonly w: number) {}
  check = () => true
  async run(m: Model, r: Real) {
    const wallet = r.wallets[this.w]!
    const res = await r.t.get(wallet)
    r.tally.add(`inspect ${res.status}`)
    if (!m.listed[wallet]) return void expect(res.body).toEqual(notWhitelisted)
    const k = unrevoked(m, wallet)
    expect(res.body).toEqual(ok(k && m.now < k.expiresAt ? record(k, m.now) : null))
  }
  toString = () => `inspect(w${this.w})`
}

class Revoke implements fc.AsyncCommand<Model, Real> {
  constructor(readonly w: number) {}
  check = () => true
  async run(m: Model, r: Real) {
    const wallet = r.wallets[this.w]!
    const res = await r.t.revoke(wallet)
    r.tally.add(`revoke ${res.status}`)
    if (!m.listed[wallet]) return void expect(res.body).toEqual(notWhitelisted)
    const k = revokeCurrent(m, wallet, 'user')
    expect(res.body).toEqual(ok({ revoked: k?.revoked === 'user' }))
  }
  toString = () => `revoke(w${this.w})`
}

class Advance implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true
  async run(m: Model, r: Real) {
    m.now += this.ms
    r.advance(this.ms)
    r.tally.add('advance')
  }
  toString = () => `advance(${this.ms} ms)`
}

class Unlist implements fc.AsyncCommand<Model, Real> {
  constructor(readonly w: number) {}
  check = () => true
  async run(m: Model, r: Real) {
    const wallet = r.wallets[this.w]!
    const res = await r.t.unlist(wallet)
    r.tally.add(`unlist ${res.status}`)
    const k = revokeCurrent(m, wallet, 'allowlist_removed')
    expect(res.body).toEqual(ok({ address: wallet, removed: m.listed[wallet], revokedKeyId: k?.id ?? null }))
    m.listed[wallet] = false
  }
  toString = () => `unlist(w${this.w})`
}

class Relist implements fc.AsyncCommand<Model, Real> {
  constructor(readonly w: number) {}
  check = () => true
  async run(m: Model, r: Real) {
    const wallet = r.wallets[this.w]!
    const res = await r.t.request(`/admin/allowlist/${wallet}`, { method: 'PUT', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    r.tally.add(`relist ${res.status}`)
    expect(res.status).toBe(200)
    expect((await res.json()).data.added).toBe(!m.listed[wallet])
    m.listed[wallet] = true
  }
  toString = () => `relist(w${this.w})`
}

/** The order exchange's view of one of the keys issued so far (or of a key never issued). */
class Verify implements fc.AsyncCommand<Model, Real> {
  constructor(readonly pick: number) {}
  check = () => true
  async run(m: Model, r: Real) {
    const k = m.keys.length === 0 ? undefined : m.keys[this.pick % m.keys.length]
    const res = await r.t.verify(k?.apiKey ?? `vaultgate_${'1'.repeat(44)}`)
    r.tally.add(`verify ${res.status}`)
    expect(res.status).toBe(200)
    if (!k)
      return void expect(res.body.data).toEqual({
        active: false,
        wallet: null,
        keyId: null,
        expiresAtMs: null,
        expiresInMs: null,
        reason: 'unknown',
        rateLimit: RATE,
      })
    const reason =
      k.revoked === 'expired'
        ? 'expired'
        : k.revoked === 'allowlist_removed'
          ? 'not_whitelisted'
          : k.revoked !== null
            ? 'revoked'
            : m.now >= k.expiresAt
              ? 'expired'
              : !m.listed[k.wallet]
                ? 'not_whitelisted'
                : null
    expect(res.body.data).toEqual({
      active: reason === null,
      wallet: k.wallet,
      keyId: k.id,
      expiresAtMs: k.expiresAt,
      expiresInMs: Math.max(0, k.expiresAt - m.now),
      reason,
      rateLimit: RATE,
    })
  }
  toString = () => `verify(#${this.pick})`
}

const WALLETS = 3
const w = fc.nat({ max: WALLETS - 1 })
const commands = fc.commands(
  [
    fc.tuple(w, fc.option(fc.constantFrom('bot', 'Desk-1', 'a_b'), { nil: undefined })).map(([i, p]) => new Create(i, p)),
    w.map((i) => new Inspect(i)),
    w.map((i) => new Revoke(i)),
    fc.constantFrom(1_000, 86_400_000, 29 * 86_400_000, 31 * 86_400_000).map((ms) => new Advance(ms)),
    w.map((i) => new Unlist(i)),
    w.map((i) => new Relist(i)),
    fc.nat().map((n) => new Verify(n)),
  ],
  { maxCommands: 20 },
)

describe(`API key lifecycle against a model (${testBackend})`, () => {
  const time = manualClock()
  let t: KeysTestApp
  beforeAll(async () => {
    t = await createKeysTestApp({
      clock: time.clock,
      env: { RATE_LIMIT_PUBLIC_PER_MINUTE: '0', RATE_LIMIT_KEYS_PER_MINUTE: '0', RATE_LIMIT_VERIFY_PER_MINUTE: '0' },
    })
  })
  afterAll(() => t.close())

  it('answers every step as the model says, and never holds two unrevoked keys for a wallet', async () => {
    const tally = new Tally('key lifecycle model')
    let sequences = 0
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        sequences++
        // Fresh wallets per sequence (allowlisted), so sequences do not see each other's keys.
        const wallets = Array.from({ length: WALLETS }, () => `0x${randomBytes(20).toString('hex')}`)
        await t.db.prisma.allowlistEntry.createMany({ data: wallets.map((address) => ({ address })) })
        const model: Model = { now: time.now(), listed: Object.fromEntries(wallets.map((a) => [a, true])), keys: [] }
        const real: Real = { t, advance: time.advance, wallets, tally }
        await fc.asyncModelRun(
          () => ({ model, real }),
          [...cmds].map((c) => wrapWithInvariant(c)),
        )
      }),
      runs(50),
    )
    tally.print({ sequences })
  })

  /** After every step: the database holds at most one unrevoked key per wallet, the model's. */
  function wrapWithInvariant(c: fc.AsyncCommand<Model, Real>): fc.AsyncCommand<Model, Real> {
    return {
      check: (m) => c.check(m),
      run: async (m, r) => {
        await c.run(m, r)
        const rows = await r.t.db.prisma.apiKey.findMany({ where: { wallet: { in: r.wallets }, revokedAt: null }, select: { id: true, wallet: true } })
        const expected = r.wallets.flatMap((wallet) => {
          const k = unrevoked(m, wallet)
          return k ? [{ id: k.id, wallet }] : []
        })
        expect(rows.sort((a, b) => a.wallet.localeCompare(b.wallet))).toEqual(expected.sort((a, b) => a.wallet.localeCompare(b.wallet)))
      },
      toString: () => c.toString(),
    }
  }
})
