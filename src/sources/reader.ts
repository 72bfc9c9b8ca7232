import {
  BaseError,
  BlockNotFoundError,
  createPublicClient,
  decodeFunctionResult,
  encodeFunctionData,
  http,
  multicall3Abi,
  type Abi,
  type PublicClient,
  type Transport,
} from 'viem'
import { systemClock, type Clock } from '../core/clock.js'
import { MULTICALL3_CANONICAL, vaultReadAbi } from './abi.js'
import type { Address, SourceChain } from './config.js'
import type { BlockRef, Hex, VaultState } from './mapping.js'
import { describeRpcError, rpcLayer, wrapTransport, type RetryPolicy, type RpcFailure, type Sleep } from './rpc.js'

// One chain as the follower sees it: a viem public client behind the request budget and the retry
// layer, the head and the confirmed head, block headers, and vault state at a block: through
// Multicall3 (one eth_call for every vault read at that block) where the chain has it, plain
// eth_calls otherwise.

/** What is read once per vault: it does not change. */
export interface VaultFacts {
  address: Address
  asset: Address
  assetDecimals: number
  vaultDecimals: number
}

/** A vault to read at a block, with the share amounts of the redeem requests made in that block. */
export interface StateRequest {
  facts: VaultFacts
  redeemShares?: readonly bigint[]
}

export interface ChainReaderOptions {
  chain: SourceChain
  /** The transport to the node; default: viem's http transport to `rpc_url`, without viem's retries. */
  transport?: Transport
  retry?: RetryPolicy
  /** Every failed RPC attempt (retried or not). */
  onFailure?: (failure: RpcFailure & { chain: string }) => void
  /** Injected in tests. */
  sleep?: Sleep
  random?: () => number
  /** CHAIN_MAX_CLOCK_SKEW_MS: how far ahead of `clock` a block's time may be (default 15 min). */
  maxClockSkewMs?: number
  clock?: Clock
}

/** A block header as the follower checks it. */
export interface BlockHeader extends BlockRef {
  parentHash: Hex
}

/**
 * A block whose time is further ahead of the clock than CHAIN_MAX_CLOCK_SKEW_MS: not an answer to
 * record (every snapshot and transaction carries its block's time), so it is refused like a
 * missing block and asked for again.
 */
export class BlockTimeAheadError extends Error {
  constructor(
    readonly blockNumber: bigint,
    readonly aheadMs: number,
  ) {
    super(
      `block ${blockNumber} is dated ${Math.round(aheadMs / 1000)} s ahead of this gateway's clock (more than CHAIN_MAX_CLOCK_SKEW_MS); not recorded, asking again`,
    )
    this.name = 'BlockTimeAheadError'
  }
}

interface Multicall {
  address: Address
  /** Blocks before this one do not have the contract (viem's blockCreated, or learnt from a failure). */
  fromBlock: bigint
}

type Call =
  | { address: Address; functionName: 'asset' | 'decimals' | 'totalAssets' | 'totalSupply' | 'convertToAssets'; args?: readonly [bigint] }
  | { address: Address; functionName: 'claimableRedeemRequest'; args: readonly [bigint, Address] }

/** An ERC-7540 redeem request to ask `claimableRedeemRequest(requestId, controller)` about. */
export interface ClaimableQuery {
  vault: Address
  requestId: bigint
  controller: Address
}

/**
 * Multicall3's deployment on a chain viem knows, if any. viem's chain list takes ~0.6 s and a few
 * MB to load, so only a chain without a configured address loads it, once.
 */
async function knownMulticall(chainId: number): Promise<Multicall | undefined> {
  const viemChains = await import('viem/chains')
  for (const c of Object.values(viemChains) as { id?: number; contracts?: { multicall3?: { address: Address; blockCreated?: number } } }[]) {
    if (c?.id === chainId && c.contracts?.multicall3)
      return { address: c.contracts.multicall3.address.toLowerCase() as Address, fromBlock: BigInt(c.contracts.multicall3.blockCreated ?? 0) }
  }
  return undefined
}

/** An error that a call at this block will always give: the contract is not there, or reverts. */
function isContractFailure(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false
  return Boolean(
    error.walk((e) => {
      const name = (e as Error).name
      return (
        name === 'AbiDecodingZeroDataError' ||
        name === 'ContractFunctionZeroDataError' ||
        name === 'ContractFunctionRevertedError' ||
        name === 'RawContractError' ||
        /execution reverted|returned no data/i.test((e as Error).message)
      )
    }),
  )
}

/** CHAIN_MAX_CLOCK_SKEW_MS's default: 15 minutes. */
export const DEFAULT_MAX_CLOCK_SKEW_MS = 900_000

export const sameHash = (a: Hex, b: Hex): boolean => a.toLowerCase() === b.toLowerCase()

export class ChainReader {
  readonly chain: SourceChain
  readonly client: PublicClient
  /** The newest head seen, and the last failure (for the freshness contract's `sources`). */
  head: bigint | null = null
  lastError: { at: Date; message: string } | null = null
  private multicall: Promise<Multicall | null> | undefined
  private readonly facts = new Map<Address, Promise<VaultFacts>>()
  private readonly maxClockSkewMs: number
  private readonly clock: Clock

  constructor(options: ChainReaderOptions) {
    this.chain = options.chain
    this.maxClockSkewMs = options.maxClockSkewMs ?? DEFAULT_MAX_CLOCK_SKEW_MS
    this.clock = options.clock ?? systemClock
    const base = options.transport ?? http(options.chain.rpc_url, { retryCount: 0, timeout: 20_000 })
    const transport = wrapTransport(
      base,
      rpcLayer({
        requestsPerSecond: options.chain.requests_per_second,
        retry: options.retry,
        sleep: options.sleep,
        random: options.random,
        onFailure: (f) => {
          if (!f.willRetry) this.lastError = { at: new Date(), message: `${f.method}: ${f.message}` }
          options.onFailure?.({ ...f, chain: options.chain.name })
        },
      }),
    )
    // cacheTime 0: a head read must be the node's, not one viem remembered.
    this.client = createPublicClient({ transport, cacheTime: 0, batch: { multicall: false } }) as PublicClient
  }

  /** The node's newest block number. */
  async headNumber(): Promise<bigint> {
    const head = await this.client.getBlockNumber({ cacheTime: 0 })
    this.head = head
    return head
  }

  /** head − confirmations: the newest block the follower may record; null while the chain is shorter. */
  async confirmedHead(): Promise<bigint | null> {
    const confirmed = (await this.headNumber()) - BigInt(this.chain.confirmations)
    return confirmed >= 0n ? confirmed : null
  }

  /** Block `number`'s header; refused (BlockTimeAheadError) when it is dated too far ahead of the clock. */
  async header(number: bigint): Promise<BlockHeader> {
    const b = await this.client.getBlock({ blockNumber: number })
    const aheadMs = Number(b.timestamp) * 1000 - this.clock().getTime()
    if (aheadMs > this.maxClockSkewMs) throw new BlockTimeAheadError(number, aheadMs)
    return { number, hash: b.hash, parentHash: b.parentHash, timestamp: b.timestamp }
  }

  async block(number: bigint): Promise<BlockRef> {
    const { parentHash: _, ...ref } = await this.header(number)
    return ref
  }

  /** Block `number`'s header, or null when the node has no such block (yet). */
  async headerIfAny(number: bigint): Promise<BlockHeader | null> {
    try {
      return await this.header(number)
    } catch (e) {
      if (e instanceof BaseError && e.walk((x) => x instanceof BlockNotFoundError)) return null
      throw e
    }
  }

  /**
   * Whether a recorded (number, hash) is still on the node's chain: false once a reorg replaced it,
   * null when the node has no block at that height (its chain is shorter after a reorg, or this
   * node of a load-balanced provider lags behind the one that answered the head): it cannot say yet.
   */
  async isCanonical(ref: { number: bigint; hash: Hex }): Promise<boolean | null> {
    const found = await this.headerIfAny(ref.number)
    return found === null ? null : sameHash(found.hash, ref.hash)
  }

  /** The Multicall3 this reader uses, or null: configured, from viem's chain list, or probed once. */
  multicallContract(): Promise<Multicall | null> {
    this.multicall ??= (async () => {
      const configured = this.chain.multicall3_address
      if (configured === null) return null
      if (configured !== undefined) return { address: configured, fromBlock: 0n }
      const known = await knownMulticall(this.chain.chain_id)
      if (known) return known
      const code = await this.client.getCode({ address: MULTICALL3_CANONICAL })
      return code && code !== '0x' ? { address: MULTICALL3_CANONICAL as Address, fromBlock: 0n } : null
    })().catch((e) => {
      this.multicall = undefined // a failed probe is tried again next time
      throw e
    })
    return this.multicall
  }

  /**
   * Runs read-only calls at a block. Each result is the decoded value or the Error of that call.
   * With Multicall3 the calls travel as one eth_call; if the contract is not there at that block,
   * the reader remembers it and uses plain eth_calls for that block and older ones.
   */
  async calls(calls: readonly Call[], blockNumber: bigint): Promise<(unknown | Error)[]> {
    if (calls.length === 0) return []
    const multicall = await this.multicallContract()
    if (multicall && blockNumber >= multicall.fromBlock) {
      const data = encodeFunctionData({
        abi: multicall3Abi,
        functionName: 'aggregate3',
        args: [
          calls.map((c) => ({
            target: c.address,
            allowFailure: true,
            callData: encodeFunctionData({ abi: vaultReadAbi, functionName: c.functionName, args: c.args } as never),
          })),
        ],
      })
      try {
        const { data: returned } = await this.client.call({ to: multicall.address, data, blockNumber })
        const results = decodeFunctionResult({ abi: multicall3Abi, functionName: 'aggregate3', data: returned ?? '0x' })
        return results.map((r, i) => {
          if (!r.success) return new Error(`${calls[i]!.functionName}() reverted`)
          try {
            return decodeFunctionResult({ abi: vaultReadAbi as Abi, functionName: calls[i]!.functionName, data: r.returnData })
          } catch (e) {
            return e instanceof Error ? e : new Error(String(e))
          }
        })
      } catch (e) {
        if (!isContractFailure(e)) throw e
        if (blockNumber + 1n > multicall.fromBlock) multicall.fromBlock = blockNumber + 1n
      }
    }
    return Promise.all(
      calls.map((c) =>
        this.client.readContract({ address: c.address, abi: vaultReadAbi, functionName: c.functionName, args: c.args, blockNumber } as never).then(
          (v: unknown) => v,
          (e: unknown) => {
            // Only a call that will always fail is that call's answer; anything else is the node's.
            if (isContractFailure(e)) return new Error(`${c.functionName}(): ${describeRpcError(e)}`)
            throw e
          },
        ),
      ),
    )
  }

  /** asset(), decimals() of the vault and of its asset: read once, at `blockNumber`. */
  vaultFacts(address: Address, blockNumber: bigint): Promise<VaultFacts> {
    const key = address.toLowerCase() as Address
    let facts = this.facts.get(key)
    if (!facts) {
      facts = (async () => {
        const [asset, vaultDecimals] = await this.calls(
          [
            { address: key, functionName: 'asset' },
            { address: key, functionName: 'decimals' },
          ],
          blockNumber,
        )
        if (asset instanceof Error) throw new Error(`vault ${key}: asset() failed: ${asset.message}`)
        if (vaultDecimals instanceof Error) throw new Error(`vault ${key}: decimals() failed: ${vaultDecimals.message}`)
        const assetAddress = (asset as string).toLowerCase() as Address
        const [assetDecimals] = await this.calls([{ address: assetAddress, functionName: 'decimals' }], blockNumber)
        if (assetDecimals instanceof Error) throw new Error(`asset ${assetAddress} of vault ${key}: decimals() failed: ${assetDecimals.message}`)
        return { address: key, asset: assetAddress, assetDecimals: Number(assetDecimals), vaultDecimals: Number(vaultDecimals) }
      })()
      // A failure is not remembered: the next call tries again.
      facts.catch(() => this.facts.delete(key))
      this.facts.set(key, facts)
    }
    return facts
  }

  /**
   * Each vault's totalAssets(), totalSupply(), convertToAssets(10^vault decimals) and
   * convertToAssets(shares) of its redeem requests, at the end of `blockNumber`. A vault whose
   * calls fail gets the Error instead (for example: not deployed yet at that block).
   */
  async readStates(requests: readonly StateRequest[], blockNumber: bigint): Promise<Map<Address, VaultState | Error>> {
    const calls: Call[] = []
    for (const { facts, redeemShares = [] } of requests) {
      calls.push(
        { address: facts.address, functionName: 'totalAssets' },
        { address: facts.address, functionName: 'totalSupply' },
        { address: facts.address, functionName: 'convertToAssets', args: [10n ** BigInt(facts.vaultDecimals)] },
        ...redeemShares.map((s) => ({ address: facts.address, functionName: 'convertToAssets' as const, args: [s] as const })),
      )
    }
    const results = await this.calls(calls, blockNumber)
    const states = new Map<Address, VaultState | Error>()
    let i = 0
    for (const { facts, redeemShares = [] } of requests) {
      const mine = results.slice(i, i + 3 + redeemShares.length)
      i += mine.length
      const failed = mine.find((r) => r instanceof Error)
      if (failed) {
        states.set(facts.address, new Error(`vault ${facts.address} at block ${blockNumber}: ${(failed as Error).message}`))
        continue
      }
      const [totalAssets, totalSupply, assetsPerShare, ...redeemed] = mine as bigint[]
      states.set(facts.address, {
        blockNumber,
        totalAssets: totalAssets!,
        totalSupply: totalSupply!,
        assetsPerShare: assetsPerShare!,
        redeemAssets: new Map(redeemShares.map((s, j) => [s, redeemed[j]!])),
      })
    }
    return states
  }

  /**
   * ERC-7540 `claimableRedeemRequest(requestId, controller)` of every query at `blockNumber`, in
   * one Multicall3 `aggregate3` call (src/sources/reader.ts calls) rather than one eth_call per
   * request; keyed by claimableKey. A query whose call fails (a vault without the function)
   * is left out: its requests stay as they are and complete on their claim.
   */
  async readClaimable(queries: readonly ClaimableQuery[], blockNumber: bigint): Promise<Map<string, bigint>> {
    const results = await this.calls(
      queries.map((q) => ({ address: q.vault, functionName: 'claimableRedeemRequest' as const, args: [q.requestId, q.controller] as const })),
      blockNumber,
    )
    const claimable = new Map<string, bigint>()
    queries.forEach((q, i) => {
      const r = results[i]
      if (typeof r === 'bigint') claimable.set(claimableKey(q), r)
    })
    return claimable
  }
}

/** `requestId` and `controller` of a ClaimableQuery, as one key. */
export const claimableKey = (q: ClaimableQuery) => `${q.vault}:${q.requestId}:${q.controller}`

export interface HeadWatch {
  stop(): Promise<void>
}

/**
 * Polls the confirmed head every `poll_interval_ms` and calls `onHead` when it moved; `onHead`
 * finishes before the next poll. A failure (of the poll or of `onHead`) is handed to `onError` and
 * the polling goes on, waiting longer after each failure in a row (doubling, with jitter, up to
 * `maxBackoffMs`) so a node that is down is not asked at the polling rate.
 */
export function watchConfirmedHead(
  reader: ChainReader,
  handlers: { onHead: (confirmed: bigint) => unknown; onError: (error: unknown) => void },
  intervalMs = reader.chain.poll_interval_ms,
  { maxBackoffMs = 60_000, random = Math.random }: { maxBackoffMs?: number; random?: () => number } = {},
): HeadWatch {
  let stopped = false
  let wake: () => void = () => {}
  let last: bigint | null = null
  let failures = 0
  const loop = (async () => {
    while (!stopped) {
      try {
        const confirmed = await reader.confirmedHead()
        if (confirmed !== null && confirmed !== last) {
          await handlers.onHead(confirmed)
          // Only once handled: a head whose handling failed is handed over again at the next poll.
          last = confirmed
        }
        failures = 0
      } catch (e) {
        failures++
        handlers.onError(e)
      }
      if (stopped) break
      // interval + random share of (interval × (2^failures − 1)), capped: full jitter on the extra wait.
      const extra = failures === 0 ? 0 : random() * Math.max(0, Math.min(maxBackoffMs, intervalMs * 2 ** Math.min(failures, 30)) - intervalMs)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs + extra)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  })()
  return {
    stop: async () => {
      stopped = true
      wake()
      await loop
    },
  }
}
