// The activity `npm run chain:demo` keeps a local chain busy with (scripts/chain-demo.ts), round
// after round: a deposit, a donation, the oldest open ERC-7540 redeem request fulfilled, the oldest
// fulfilled one claimed, a withdrawal, a new redeem request. The requests are tracked, so a round
// fulfils and claims only what an earlier step requested and nothing twice (test/sources/chain-demo-anvil.unit.test.ts).
import type { Address } from 'viem'
import type { TestChain } from '../test/support/anvil.js'

export interface RedeemRequest {
  controller: Address
  shares: bigint
}

export interface DemoAccounts {
  alice: Address
  bob: Address
  carol: Address
  dave: Address
  vault: Address
}

const usd = (x: number) => BigInt(Math.round(x * 1e6))
const shares = (x: number) => BigInt(x) * 10n ** 18n
const amount = (s: bigint) => (s / 10n ** 18n).toString()

export class DemoActivity {
  /** Requested, not fulfilled yet, oldest first. */
  readonly requested: RedeemRequest[]
  /** Fulfilled, not claimed yet, oldest first. */
  readonly fulfilled: RedeemRequest[] = []
  private step = 0

  constructor(
    private readonly chain: TestChain,
    private readonly who: DemoAccounts,
    requested: RedeemRequest[] = [],
  ) {
    this.requested = [...requested]
  }

  /** The next step: what it does, in words, and the doing (the tracked requests move only when it succeeds). */
  next(): { what: string; run: () => Promise<unknown> } {
    const { chain, who } = this
    const name = (a: Address) => Object.entries(who).find(([, v]) => v === a)?.[0] ?? a
    switch (this.step++ % 6) {
      case 0:
        return {
          what: 'bob deposits 250 tUSD into demo-usd',
          run: async () => {
            await chain.fund(who.bob, who.vault, usd(250))
            await chain.deposit(who.bob, who.vault, usd(250))
          },
        }
      case 1:
        return { what: 'a donation of 42 tUSD to demo-usd (yield without an event)', run: () => chain.donate(who.vault, usd(42)) }
      case 2: {
        const r = this.requested[0]
        if (!r) return { what: 'no open redeem request to fulfil', run: async () => {} }
        return {
          what: `${name(r.controller)}'s redeem of ${amount(r.shares)} shares is fulfilled`,
          run: async () => {
            await chain.fulfill(r.controller, r.shares)
            this.fulfilled.push(this.requested.shift()!)
          },
        }
      }
      case 3: {
        const r = this.fulfilled[0]
        if (!r) return { what: 'no fulfilled redeem to claim', run: async () => {} }
        return {
          what: `${name(r.controller)} claims ${amount(r.shares)} shares`,
          run: async () => {
            await chain.claim(r.controller, r.shares)
            this.fulfilled.shift()
          },
        }
      }
      case 4:
        return { what: 'alice withdraws 100 tUSD from demo-usd', run: () => chain.withdraw(who.alice, who.vault, usd(100)) }
      default: {
        const r = { controller: who.carol, shares: shares(200) }
        return {
          what: 'carol requests a redeem of 200 shares',
          run: async () => {
            await chain.requestRedeem(r.controller, r.shares)
            this.requested.push(r)
          },
        }
      }
    }
  }
}
