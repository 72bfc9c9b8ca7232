import type { ImportTransaction } from '../importer/document.js'
import type { Address, VaultKind } from './config.js'
import type { LogFetcher } from './logs.js'
import {
  mapVaultEvents,
  markClaimable,
  type MappedEvents,
  snapshotOf,
  type BlockRef,
  type MappedVault,
  type OpenRedeem,
  type VaultEvent,
  type VaultSnapshot,
  type VaultState,
} from './mapping.js'
import { claimableKey, type ChainReader, type ClaimableQuery, type VaultFacts } from './reader.js'

// One step of the follower, without the database: read a range of confirmed blocks for a set of
// vaults on one chain and return everything to record, plus each vault's progress to keep. The
// caller writes the batch and the new cursor (block number and hash of `to`) in one transaction.

/** A vault being followed: its configuration and what was read once from the chain. */
export interface FollowedVault {
  id: string
  address: Address
  kind: VaultKind
  snapshotIntervalMs: number
  facts: VaultFacts
}

/** Kept per vault between ranges (JSON-safe). */
export interface VaultProgress {
  /** The newest snapshot's time (RFC 3339), null before the first. */
  lastSnapshotAt: string | null
  open: OpenRedeem[]
}

export interface RangeBatch {
  from: bigint
  to: bigint
  /** The cursor to store: header of `to`. */
  block: BlockRef
  transactions: ImportTransaction[]
  snapshots: VaultSnapshot[]
  progress: Map<string, VaultProgress>
  warnings: string[]
}

/** The chain moved under the reader (a log's block hash differs from the header read after it). */
export class ReorgDuringReadError extends Error {
  constructor(readonly blockNumber: bigint) {
    super(`block ${blockNumber} changed while it was read (reorg); the range is read again`)
    this.name = 'ReorgDuringReadError'
  }
}

/** The next range after `cursor` (the last recorded block) up to the confirmed head, at most `maxBlocks` long. */
export function nextRange(cursor: bigint, confirmedHead: bigint, maxBlocks: number): { from: bigint; to: bigint } | null {
  const from = cursor + 1n
  if (from > confirmedHead) return null
  const last = from + BigInt(maxBlocks) - 1n
  return { from, to: last < confirmedHead ? last : confirmedHead }
}

/**
 * The blocks of [from, end.number] at which timed snapshots fall due: one each `intervalMs` after
 * the last, and one at `from` when the vault has none yet or one is overdue. Blocks are estimated from the times
 * of `start` (a block at or before `from`) and `end`, assuming an even pace; each snapshot is
 * stamped with its block's real time, so an estimate only shifts a snapshot a little.
 */
export function planTimedSnapshots(input: { from: bigint; start: BlockRef; end: BlockRef; lastSnapshotAt: string | null; intervalMs: number }): bigint[] {
  const { from, start, end, intervalMs } = input
  const startMs = Number(start.timestamp) * 1000
  const endMs = Number(end.timestamp) * 1000
  const blocks: bigint[] = []
  let due = input.lastSnapshotAt === null ? -Infinity : Date.parse(input.lastSnapshotAt) + intervalMs
  // None yet, or overdue (a vault added late, a longer pause, a shorter interval): one at once.
  if (due <= startMs) {
    blocks.push(from)
    due = startMs + intervalMs
  }
  const spanBlocks = end.number - start.number
  const spanMs = BigInt(endMs - startMs)
  while (due <= endMs) {
    // ceil((due − start) × blocks / ms), in integers so whole numbers stay whole
    const offset = BigInt(due - startMs) * spanBlocks
    let b = spanMs <= 0n ? end.number : start.number + (offset + spanMs - 1n) / spanMs
    if (b < from) b = from
    const previous = blocks.at(-1)
    if (previous !== undefined && b <= previous) b = previous + 1n
    if (b > end.number) break
    blocks.push(b)
    due += intervalMs
  }
  return blocks
}

const mappedVault = (v: FollowedVault, chainId: number): MappedVault => ({
  id: v.id,
  chainId,
  kind: v.kind,
  assetDecimals: v.facts.assetDecimals,
  vaultDecimals: v.facts.vaultDecimals,
})

/**
 * decisions §14: the ERC-7540 requests still pending at the end of the range whose assets the vault
 * reports claimable become `claimable`. Every pending request of every vault of the range is asked
 * about in one batch (Multicall3), at `to`, the range's confirmed end; a request made and fulfilled
 * within the range is pending then claimable in the same batch (its row is written once, claimable).
 */
async function markClaimableRequests(reader: ChainReader, vaults: readonly FollowedVault[], mappedOf: Map<string, MappedEvents>, to: bigint): Promise<void> {
  const queries = new Map<string, ClaimableQuery>()
  for (const v of vaults) {
    if (v.kind !== 'erc7540') continue
    for (const o of mappedOf.get(v.id)!.open) {
      if (o.transaction.status !== 'pending' || o.requestId === undefined) continue
      const q = { vault: v.address, requestId: BigInt(o.requestId), controller: o.controller }
      queries.set(claimableKey(q), q)
    }
  }
  if (queries.size === 0) return
  const claimable = await reader.readClaimable([...queries.values()], to)
  for (const v of vaults) {
    if (v.kind !== 'erc7540') continue
    const mapped = mappedOf.get(v.id)!
    const marked = markClaimable(mapped.open, (requestId, controller) => claimable.get(claimableKey({ vault: v.address, requestId, controller })))
    if (marked.changed.length === 0) continue
    // One row per id: a request made in this range is replaced by its claimable state.
    const byId = new Map(mapped.transactions.map((t) => [t.id, t]))
    for (const t of marked.changed) byId.set(t.id, t)
    mappedOf.set(v.id, { ...mapped, open: marked.open, transactions: [...byId.values()] })
  }
}

/**
 * Reads [from, to] for `vaults` (all behind the same cursor): their events, block headers, and
 * states at every block with an event of the vault and at its timed snapshots. `previous` is the
 * header of the block before `from` when known (the stored cursor); it saves reading `from`.
 */
export async function collectRange(
  reader: ChainReader,
  fetcher: LogFetcher,
  input: { vaults: readonly FollowedVault[]; from: bigint; to: bigint; previous: BlockRef | null; progress: ReadonlyMap<string, VaultProgress> },
): Promise<RangeBatch> {
  const { vaults, from, to } = input
  const chainId = reader.chain.chain_id
  const byAddress = new Map(vaults.map((v) => [v.address, v]))
  const events = await fetcher.fetch(
    vaults.map((v) => v.address),
    from,
    to,
  )
  const eventsOf = new Map<string, VaultEvent[]>(vaults.map((v) => [v.id, []]))
  for (const e of events) {
    const v = byAddress.get(e.vault)
    if (v) eventsOf.get(v.id)!.push(e)
  }

  const end = await reader.block(to)
  const start = input.previous ?? (from === to ? end : await reader.block(from))
  const progressOf = (id: string): VaultProgress => input.progress.get(id) ?? { lastSnapshotAt: null, open: [] }

  // Which vault needs its state at which block, and which redeem amounts there.
  const wanted = new Map<bigint, Map<string, bigint[]>>()
  const want = (block: bigint, vaultId: string, shares?: bigint) => {
    let atBlock = wanted.get(block)
    if (!atBlock) wanted.set(block, (atBlock = new Map()))
    let list = atBlock.get(vaultId)
    if (!list) atBlock.set(vaultId, (list = []))
    if (shares !== undefined && !list.includes(shares)) list.push(shares)
  }
  for (const v of vaults) {
    for (const e of eventsOf.get(v.id)!) want(e.blockNumber, v.id, e.type === 'redeem_request' ? e.shares : undefined)
    for (const b of planTimedSnapshots({ from, start, end, lastSnapshotAt: progressOf(v.id).lastSnapshotAt, intervalMs: v.snapshotIntervalMs })) want(b, v.id)
  }

  const blocks = new Map<bigint, BlockRef>([[end.number, end]])
  if (start.number >= from) blocks.set(start.number, start)
  await Promise.all([...wanted.keys()].filter((n) => !blocks.has(n)).map(async (n) => blocks.set(n, await reader.block(n))))
  for (const e of events) if (blocks.get(e.blockNumber)!.hash.toLowerCase() !== e.blockHash.toLowerCase()) throw new ReorgDuringReadError(e.blockNumber)

  const states = new Map<string, Map<bigint, VaultState>>(vaults.map((v) => [v.id, new Map()]))
  const warnings: string[] = []
  const vaultById = new Map(vaults.map((v) => [v.id, v]))
  await Promise.all(
    [...wanted].map(async ([blockNumber, atBlock]) => {
      const requests = [...atBlock].map(([id, redeemShares]) => ({ facts: vaultById.get(id)!.facts, redeemShares }))
      const read = await reader.readStates(requests, blockNumber)
      for (const [id] of atBlock) {
        const state = read.get(vaultById.get(id)!.address)!
        if (state instanceof Error) warnings.push(`${id}: ${state.message}`)
        else states.get(id)!.set(blockNumber, state)
      }
    }),
  )

  const mappedOf = new Map<string, MappedEvents>()
  for (const v of vaults) {
    const mine = states.get(v.id)!
    // A redeem request without its state cannot be valued: fail the range rather than guess.
    for (const e of eventsOf.get(v.id)!)
      if (e.type === 'redeem_request' && v.kind === 'erc7540' && !mine.has(e.blockNumber))
        throw new Error(`${v.id}: cannot read the vault at block ${e.blockNumber} to value a redeem request`)
    mappedOf.set(v.id, mapVaultEvents({ vault: mappedVault(v, chainId), events: eventsOf.get(v.id)!, blocks, states: mine, open: progressOf(v.id).open }))
  }
  await markClaimableRequests(reader, vaults, mappedOf, to)

  const transactions: ImportTransaction[] = []
  const snapshots: VaultSnapshot[] = []
  const progress = new Map<string, VaultProgress>()
  for (const v of vaults) {
    const mv = mappedVault(v, chainId)
    const mine = states.get(v.id)!
    const mapped = mappedOf.get(v.id)!
    transactions.push(...mapped.transactions)
    warnings.push(...mapped.warnings)
    const vaultSnapshots = [...mine.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([n, s]) => snapshotOf(mv, s, blocks.get(n)!))
    // Two blocks in the same second make one snapshot (the key is vault and time): the later wins.
    const byTime = new Map(vaultSnapshots.map((s) => [s.as_of, s]))
    snapshots.push(...byTime.values())
    const last = vaultSnapshots.at(-1)?.as_of ?? progressOf(v.id).lastSnapshotAt
    progress.set(v.id, { lastSnapshotAt: last, open: mapped.open })
  }
  snapshots.sort((a, b) => (a.as_of < b.as_of ? -1 : a.as_of > b.as_of ? 1 : 0))
  return { from, to, block: end, transactions, snapshots, progress, warnings }
}
