import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { listen, liveVault } from '../support/live.js'
import { subscribe, type Subscription } from '../support/sse.js'

// SUBSCRIPTIONS_PER_IP counts clients as every per-IP limit does (src/core/client-address.ts):
// an IPv6 client by its /64 (RATE_LIMIT_IPV6_PREFIX), whichever addresses in it it uses.

const VAULT_UPDATED = 'subscription($id: ID!) { vaultUpdated(id: $id) { id tvl } }'

describe(`subscription streams per client network (${testBackend})`, () => {
  let t: TestApp
  let base: string
  let stop: () => Promise<void>
  const open: Subscription[] = []
  beforeAll(async () => {
    // Behind one trusted proxy: the client address is the X-Forwarded-For entry it wrote.
    t = await createTestApp({ TRUST_PROXY: '1', RATE_LIMIT_PUBLIC_PER_MINUTE: '0' })
    ;({ base, stop } = await listen(t.app))
    await importDocument({ vaults: [liveVault('per-client')] }, t.db.prisma)
  })
  afterAll(async () => {
    for (const s of open) s.close()
    await stop()
    await t.close()
  })

  const sub = async (address: string) => {
    const s = await subscribe(fetch, `${base}/graphql`, VAULT_UPDATED, { id: 'per-client' }, { 'x-forwarded-for': address })
    open.push(s)
    return s.status
  }

  it('admits 20 streams from one IPv6 /64, from 25 different addresses, and refuses the other 5; another /64 is another client', async () => {
    const statuses = []
    for (let i = 1; i <= 25; i++) statuses.push(await sub(`2001:db8:77:1:${i.toString(16)}::${i}`))
    expect(statuses).toEqual([...Array(20).fill(200), ...Array(5).fill(429)])
    expect(await sub('2001:db8:77:2::1')).toBe(200)
    expect(t.app.subscriptions.open).toBe(21)
  })
})
