import type { PublicClient } from 'viem'
import { vaultEventsAbi } from './abi.js'
import type { Address } from './config.js'
import type { Hex, VaultEvent } from './mapping.js'
import { isRangeRefusal } from './rpc.js'

// eth_getLogs in bounded block ranges. Nodes and providers refuse ranges that are too wide (or
// return too many logs) in their own words; a refused range is halved until it passes, and the
// range grows back slowly (×1.5 after a few successes) but stays below the smallest range refused
// lately, so a provider's limit costs a few refusals, not one in every few requests.

export interface LogFetcherOptions {
  /** The widest range tried (blocks). */
  maxSpan: number
  /** Successes in a row before the range grows. */
  growAfter?: number
  /** Successes in a row after which a refused size may be tried again. */
  forgetRefusalAfter?: number
  /** Each refused range, for logs and tests. */
  onRefusal?: (range: { from: bigint; to: bigint }, error: unknown) => void
}

export class LogFetcher {
  /** The range (blocks) the next request asks for. */
  span: number
  private ceiling: number
  private successes = 0
  private sinceRefusal = 0

  constructor(
    private readonly client: PublicClient,
    private readonly options: LogFetcherOptions,
  ) {
    this.span = options.maxSpan
    this.ceiling = options.maxSpan
  }

  /** Every Deposit, Withdraw and RedeemRequest of `addresses` in [from, to], in chain order. */
  async fetch(addresses: readonly Address[], from: bigint, to: bigint): Promise<VaultEvent[]> {
    const events: VaultEvent[] = []
    if (addresses.length === 0) return events
    const { growAfter = 3, forgetRefusalAfter = 100 } = this.options
    for (let cursor = from; cursor <= to; ) {
      const end = cursor + BigInt(this.span) - 1n < to ? cursor + BigInt(this.span) - 1n : to
      try {
        const logs = await this.client.getLogs({ address: [...addresses], events: vaultEventsAbi, fromBlock: cursor, toBlock: end, strict: true })
        for (const log of logs) {
          if (log.removed || log.blockNumber === null || log.transactionHash === null || log.logIndex === null || log.blockHash === null) continue
          const base = {
            vault: log.address.toLowerCase() as Address,
            blockNumber: log.blockNumber,
            blockHash: log.blockHash as Hex,
            txHash: log.transactionHash as Hex,
            logIndex: log.logIndex,
          }
          const a = log.args as Record<string, unknown>
          const addr = (k: string) => (a[k] as string).toLowerCase() as Address
          if (log.eventName === 'Deposit')
            events.push({ ...base, type: 'deposit', sender: addr('sender'), owner: addr('owner'), assets: a.assets as bigint, shares: a.shares as bigint })
          else if (log.eventName === 'Withdraw')
            events.push({
              ...base,
              type: 'withdraw',
              sender: addr('sender'),
              receiver: addr('receiver'),
              owner: addr('owner'),
              assets: a.assets as bigint,
              shares: a.shares as bigint,
            })
          else
            events.push({
              ...base,
              type: 'redeem_request',
              controller: addr('controller'),
              owner: addr('owner'),
              requestId: a.requestId as bigint,
              sender: addr('sender'),
              shares: a.shares as bigint,
            })
        }
        cursor = end + 1n
        this.successes++
        if (++this.sinceRefusal >= forgetRefusalAfter) this.ceiling = this.options.maxSpan
        if (this.successes >= growAfter && this.span < this.ceiling) {
          this.span = Math.min(this.ceiling, Math.ceil(this.span * 1.5))
          this.successes = 0
        }
      } catch (error) {
        const asked = Number(end - cursor) + 1
        if (asked <= 1 || !isRangeRefusal(error)) throw error
        this.options.onRefusal?.({ from: cursor, to: end }, error)
        this.ceiling = Math.min(this.ceiling, asked - 1)
        this.span = Math.max(1, Math.floor(asked / 2))
        this.successes = 0
        this.sinceRefusal = 0
      }
    }
    return events.sort((a, b) => (a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1))
  }
}
