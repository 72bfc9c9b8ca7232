import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'
import { answered } from '../support/bodies.js'

// NUMERIC(78,18): 60 integer digits and 18 fractional ones, exact end to end.
const MAX = '999999999999999999999999999999999999999999999999999999999999.999999999999999999'
const TINY = '0.000000000000000001'

describe(`amounts at full precision (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp()
    await insertVault(t.db.prisma, 'max', { tvl: MAX, sharePrice: TINY })
    await insertVault(t.db.prisma, 'zeros', { tvl: '1234567.000000000000000001', sharePrice: '1.500000000000000000' })
  })
  afterAll(() => t.close())

  it('round-trips through Prisma without losing a digit', async () => {
    const v = await t.db.prisma.vault.findUniqueOrThrow({ where: { id: 'max' } })
    expect(v.tvl.toFixed()).toBe(MAX)
    expect(v.sharePrice.toFixed()).toBe(TINY)
  })

  it('is served in plain notation: no exponent, no trailing zeros', async () => {
    const res = await t.graphql('{ a: vault(id: "max") { tvl sharePrice } b: vault(id: "zeros") { tvl sharePrice } }')
    expect(res).toEqual({
      status: 200,
      body: answered({ a: { tvl: MAX, sharePrice: TINY }, b: { tvl: '1234567.000000000000000001', sharePrice: '1.5' } }),
    })
  })
})
