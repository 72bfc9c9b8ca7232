import type { Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DemoActivity } from '../../scripts/chain-demo-activity.js'
import { anvilSkip, anvilSuiteTitle, startAnvil, TestChain, type Anvil } from '../support/anvil.js'
import { freePort } from '../support/process.js'

// `npm run chain:demo`'s rounds of activity (scripts/chain-demo-activity.ts) on a real anvil: every
// step of several rounds succeeds (the first version fulfilled dave's redeem again in its second
// round, and the contract reverted), and the node listens on the port asked for (--anvil-port).

const skip = anvilSkip()
const shares = (x: number) => BigInt(x) * 10n ** 18n

describe.skipIf(skip)(anvilSuiteTitle('chain:demo activity (anvil)', skip), () => {
  let anvil: Anvil
  let port: number
  beforeAll(async () => {
    port = await freePort()
    anvil = await startAnvil(20_000, { realTime: true, port })
  })
  afterAll(() => anvil?.stop())

  it('listens on the anvil port it is given', () => {
    expect(anvil.url).toBe(`http://127.0.0.1:${port}`)
  })

  it('runs round after round without a failed step, fulfilling and claiming each request once', async () => {
    const chain = new TestChain(anvil.url, anvil.accounts)
    const [, alice, bob, carol, dave] = anvil.accounts as [Address, Address, Address, Address, Address]
    const { vault, asyncVault } = await chain.deployAll()
    // The demo's opening (scripts/chain-demo.ts), in short.
    await chain.fund(alice, vault, 25_000_000_000n)
    await chain.deposit(alice, vault, 20_000_000_000n)
    await chain.fund(carol, asyncVault, 12_000_000_000n)
    await chain.deposit(carol, asyncVault, 10_000_000_000n)
    await chain.deposit(carol, asyncVault, 1_500_000_000n, dave)
    await chain.requestRedeem(dave, shares(500))

    const activity = new DemoActivity(chain, { alice, bob, carol, dave, vault }, [{ controller: dave, shares: shares(500) }])
    const done: string[] = []
    for (let step = 0; step < 18; step++) {
      const { what, run } = activity.next()
      await run()
      done.push(what)
    }
    const round = (fulfilled: string, claimed: string) => [
      'bob deposits 250 tUSD into demo-usd',
      'a donation of 42 tUSD to demo-usd (yield without an event)',
      fulfilled,
      claimed,
      'alice withdraws 100 tUSD from demo-usd',
      'carol requests a redeem of 200 shares',
    ]
    expect(done).toEqual([
      ...round("dave's redeem of 500 shares is fulfilled", 'dave claims 500 shares'),
      ...round("carol's redeem of 200 shares is fulfilled", 'carol claims 200 shares'),
      ...round("carol's redeem of 200 shares is fulfilled", 'carol claims 200 shares'),
    ])
    expect(activity.requested).toEqual([{ controller: carol, shares: shares(200) }])
    expect(activity.fulfilled).toEqual([])
  })
})
