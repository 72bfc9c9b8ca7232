import type pg from 'pg'
import type { Transport } from 'viem'
import { systemClock, type Clock } from '../core/clock.js'
import { logger } from '../core/log.js'
import { sourceFollower, sourceHeadBlock, sourceLagBlocks, sourcePaused, sourceReorgs, sourceRpcFailures, sourceSyncedBlock } from '../core/metrics.js'
import { holdSessionLock, type SessionLock } from '../db/session-lock.js'
import { validateImportDocument } from '../importer/document.js'
import { checkChain } from './check.js'
import { collectRange, nextRange, ReorgDuringReadError, type FollowedVault, type RangeBatch } from './collect.js'
import { vaultRecord, type SourceChain, type SourcesConfig, type SourceVault } from './config.js'
import { LogFetcher } from './logs.js'
import type { Hex, VaultSnapshot } from './mapping.js'
import { BlockTimeAheadError, ChainReader, sameHash, watchConfirmedHead, type BlockHeader, type HeadWatch } from './reader.js'
import { describeRpcError, type RetryPolicy } from './rpc.js'
import { sourcesStatus, type SourceStatus } from './status.js'
import {
  type Cursor,
  type ChainFollowStatus,
  CursorMovedError,
  cursorBlock,
  JOURNAL_BLOCKS,
  journalStarts,
  openCursors,
  readCursors,
  recordChainState,
  rollBack,
  type SourceDb,
  vaultLiveValues,
  writeRange,
  writeVaultRecords,
} from './store.js'

// The chain source's follower (decisions §12): per chain, it polls the confirmed head (head −
// confirmations) and records every range of blocks up to it, in order, one database transaction
// per range (src/sources/store.ts writeRange): the range's transactions and snapshots through the
// importer, and the vaults' cursors. A restart resumes after the last committed range: nothing
// read twice, nothing skipped. Before each range it checks that the block it stands on is still
// the chain's; when a reorg deeper than the confirmations replaced it, the journaled ranges from
// the fork on are rolled back and read again from the new chain.
//
// A node's word alone never erases data: a hash that disagrees with the journal is a reorg only
// when the node says it again and its next block builds on it (replacementConfirmed). A node that
// contradicts itself, or dates blocks ahead of the clock, pauses the chain (`degraded`: retried,
// nothing deleted); a reorg deeper than the journal stops it (`stopped`) until the node agrees with
// the journal again or an operator steps in (README "Following vaults on chain").
//
// One instance at a time follows (PostgreSQL: a session advisory lock, src/db/session-lock.ts;
// the others wait and take over within the lock's retry time when it goes). Embedded PGlite
// belongs to one process (the data directory's lock, src/db/embedded-lock.ts), so no lock there.

/** pg_advisory_lock key of the follower ("vaultgat" in ASCII). */
export const FOLLOWER_LOCK_KEY = 0x7661756c74676174n

/** How often a follower that recorded nothing still writes its chain's head and a success (for /v1/status on every instance). */
const STATE_HEARTBEAT_MS = 60_000

export interface SourceFollowerOptions {
  sources: SourcesConfig
  db: SourceDb
  /** PostgreSQL: the connection for the lock's own session. Absent (embedded PGlite): no lock. */
  lock?: { connection: pg.ClientConfig; retryMs?: number }
  clock?: Clock
  /** Per chain (tests count or refuse requests). */
  transport?: (chain: SourceChain) => Transport | undefined
  retry?: RetryPolicy
  /** After each committed change (the change NOTIFY reaches every instance too; this is the local shortcut). */
  onDataChanged?: () => void
  /** CHAIN_MAX_CLOCK_SKEW_MS (default 15 min). */
  maxClockSkewMs?: number
}

/**
 * Why a chain is paused rather than failing like an unreachable node: each kind is one episode
 * (one log line, the status and the vaultgate_source_paused gauge) until it is over.
 */
abstract class ChainPause extends Error {
  abstract readonly status: Exclude<ChainFollowStatus, 'ok'>
  abstract readonly reason: 'node_contradicts' | 'block_time_ahead' | 'deep_reorg'
}

/** The node gives a recorded block another hash, but not consistently: nothing is rolled back on it. */
class NodeContradictionError extends ChainPause {
  readonly status = 'degraded'
  readonly reason = 'node_contradicts'
  constructor(detail: string) {
    super(`the node contradicts itself: ${detail}; following paused, nothing deleted, asking again`)
    this.name = 'NodeContradictionError'
  }
}

/** Every journaled block was replaced: rolling back would not reach the fork, so nothing is. */
class DeepReorgError extends ChainPause {
  readonly status = 'stopped'
  readonly reason = 'deep_reorg'
  constructor(from: bigint, to: bigint) {
    super(
      `the node replaced block ${to} and every journaled block down to ${from} (a reorg deeper than the journal's ${JOURNAL_BLOCKS} blocks, or a node on another chain); following stopped, nothing deleted. An operator decides: check rpc_url against another node; the chain is followed again by itself once its node agrees with the recorded blocks (README "Following vaults on chain")`,
    )
    this.name = 'DeepReorgError'
  }
}

const pauseOf = (e: unknown): { status: 'degraded' | 'stopped'; reason: string; message: string } | undefined => {
  if (e instanceof ChainPause) return { status: e.status, reason: e.reason, message: e.message }
  if (e instanceof BlockTimeAheadError) return { status: 'degraded', reason: 'block_time_ahead', message: e.message }
  return undefined
}

export interface SourceFollower {
  /** True while this instance follows the chains (it holds the lock, or needs none). */
  readonly following: boolean
  /** Each chain's state as recorded in the database: the same answer on every instance. */
  status(): Promise<SourceStatus[]>
  /** Finishes the range being written, stops, and releases the lock. */
  stop(): Promise<void>
}

/** Starts following the chains of `sources` (once this instance holds the lock, with PostgreSQL). */
export function startSourceFollower(options: SourceFollowerOptions): SourceFollower {
  const clock = options.clock ?? systemClock
  let chains: ChainFollower[] = []
  let stopping = false
  const byChain = new Map<string, (readonly [SourceVault, number])[]>()
  options.sources.vaults.forEach((v, i) => {
    byChain.set(v.chain, [...(byChain.get(v.chain) ?? []), [v, i]])
  })

  const begin = () => {
    if (stopping) return
    chains = Object.values(options.sources.chains)
      .filter((c) => byChain.has(c.name))
      .map((c) => new ChainFollower(c, byChain.get(c.name)!, { ...options, clock }))
    for (const c of chains) c.start()
    sourceFollower.set(1)
  }
  const end = async () => {
    const running = chains
    chains = []
    sourceFollower.set(0)
    await Promise.all(running.map((c) => c.stop()))
  }

  let lock: SessionLock | undefined
  sourceFollower.set(0)
  if (!options.lock) begin()
  else {
    let lastLockError = ''
    lock = holdSessionLock({
      connection: options.lock.connection,
      key: FOLLOWER_LOCK_KEY,
      applicationName: 'vaultgate-sources',
      retryMs: options.lock.retryMs,
      onAcquired: () => {
        logger.info('chain source: this instance follows the chains (it holds the lock)')
        begin()
      },
      onLost: async (reason) => {
        logger.warn({ reason }, 'chain source: lost the lock; this instance stops following (another may take over)')
        await end()
      },
      onError: (e) => {
        if (e.message !== lastLockError) logger.warn({ err: e.message }, 'chain source: cannot ask for the lock; trying again')
        lastLockError = e.message
      },
    })
  }

  return {
    get following() {
      return chains.length > 0
    },
    status: () => sourcesStatus(options.db, options.sources),
    stop: async () => {
      stopping = true
      await end()
      await lock?.close()
    },
  }
}

interface Deps extends SourceFollowerOptions {
  clock: Clock
}

interface Active {
  source: SourceVault
  followed: FollowedVault
}

/** One chain: its reader, its vaults' cursors, and the loop that records ranges up to the confirmed head. */
class ChainFollower {
  private readonly reader: ChainReader
  private readonly fetcher: LogFetcher
  private watch: HeadWatch | undefined
  /** The vaults that passed the checks, by id. */
  private readonly active = new Map<string, Active>()
  private cursors = new Map<string, Cursor>()
  /** Vaults with a row in the database. */
  private readonly known = new Set<string>()
  private prepared = false
  private stopped = false
  private lastStateWrite = 0
  private errorRecorded = false
  /** Why vaults were left out at start: it stays the chain's last error while the follower runs. */
  private leftOut: { message: string; at: Date } | null = null
  /** The pause under way (ChainPause): one log line when it begins, one when it ends. */
  private pause: { status: 'degraded' | 'stopped'; reason: string; since: Date } | null = null
  /** What stopped the chain, while it is stopped (its message stays the status' last error). */
  private deepReorg: DeepReorgError | undefined
  private readonly log

  constructor(
    readonly chain: SourceChain,
    private readonly vaults: readonly (readonly [SourceVault, number])[],
    private readonly deps: Deps,
  ) {
    this.log = logger.child({ chain: chain.name })
    this.reader = new ChainReader({
      chain,
      transport: deps.transport?.(chain),
      retry: deps.retry,
      clock: deps.clock,
      maxClockSkewMs: deps.maxClockSkewMs,
      onFailure: (f) => {
        if (!f.reverted) sourceRpcFailures.inc({ chain: chain.name, retried: String(f.willRetry) })
      },
    })
    this.fetcher = new LogFetcher(this.reader.client, {
      maxSpan: chain.max_block_range,
      onRefusal: (range, e) =>
        this.log.debug({ from: range.from, to: range.to, err: describeRpcError(e) }, 'chain source: the node refused a log range; asking for less'),
    })
  }

  start(): void {
    this.watch = watchConfirmedHead(this.reader, { onHead: (confirmed) => this.onHead(confirmed), onError: (e) => this.onError(e) })
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.watch?.stop()
  }

  private async onHead(confirmed: bigint): Promise<void> {
    if (!this.prepared) await this.prepare()
    if (this.active.size === 0) return
    await this.catchUp(confirmed)
    this.observe()
    const now = this.deps.clock()
    const resumed = this.endPause()
    if (resumed || this.errorRecorded || now.getTime() - this.lastStateWrite >= STATE_HEARTBEAT_MS) {
      await recordChainState(this.deps.db, this.chain.name, this.chain.chain_id, {
        head: this.reader.head ?? undefined,
        successAt: now,
        error: this.leftOut,
        status: 'ok',
      })
      this.lastStateWrite = now.getTime()
      this.errorRecorded = false
    }
  }

  /**
   * The checks of `vaultgate sources check` (src/sources/check.ts), before anything is written: a
   * chain that serves another chain id, or a contract that is not the vault the file says, is
   * left out with an error; a node that does not answer is asked again at the next poll.
   */
  private async prepare(): Promise<void> {
    const findings = await checkChain(this.reader, this.vaults)
    const transient = findings.find((f) => f.level === 'error' && f.transient)
    if (transient) throw new Error(`${transient.path}: ${transient.message}`)
    const excluded = new Set<number>()
    for (const f of findings) {
      if (f.level === 'info') this.log.info({ path: f.path }, `chain source: ${f.message}`)
      else if (f.level === 'warning') this.log.warn({ path: f.path }, `chain source: ${f.message}`)
      else {
        this.log.error({ path: f.path }, `chain source: ${f.message}; not followed`)
        const vault = /^vaults\[(\d+)\]/.exec(f.path)
        if (vault) excluded.add(Number(vault[1]))
        else for (const [, i] of this.vaults) excluded.add(i) // the chain itself
      }
    }
    const errors = findings.filter((f) => f.level === 'error')
    if (errors.length > 0) {
      this.leftOut = { message: errors.map((f) => `${f.path}: ${f.message}`).join('; '), at: this.deps.clock() }
      await this.recordError(this.leftOut.message)
    }

    const head = this.reader.head!
    for (const [source, i] of this.vaults) {
      if (excluded.has(i)) continue
      const facts = await this.reader.vaultFacts(source.address, head) // read by the checks: no request
      this.active.set(source.id, {
        source,
        followed: { id: source.id, address: source.address, kind: source.kind, snapshotIntervalMs: source.snapshot_interval_ms, facts },
      })
    }
    const sources = [...this.active.values()].map((a) => a.source)
    const now = this.deps.clock()
    const { cursors, restarted } = await openCursors(this.deps.db, sources, now)
    for (const id of restarted)
      this.log.warn({ vault: id }, 'chain source: the sources file names another contract or chain for this vault id; following it from its from_block')
    this.cursors = cursors
    // The file's metadata for the vaults that already have a row, with their live values as they
    // are (a new base_asset_price_usd reaches the live values with the next snapshot): no snapshot
    // is recorded at the wall clock's time.
    const live = await vaultLiveValues(
      this.deps.db,
      sources.map((s) => s.id),
    )
    for (const id of live.keys()) this.known.add(id)
    const records = sources
      .filter((s) => live.has(s.id))
      .map((s) => {
        const values = live.get(s.id)!
        return { ...vaultRecord(s, values), base_asset_price_usd: values.base_asset_price_usd }
      })
    if (records.length > 0) await writeVaultRecords(this.deps.db, validateImportDocument({ vaults: records }).vaults, now)
    if (records.length > 0) this.deps.onDataChanged?.()
    this.prepared = true
  }

  /**
   * isCanonical, where "the node has no such block" is not an answer: its chain is shorter than a
   * block it gave before (it will grow past it again; then the hashes tell), or it is a node of a
   * load-balanced provider lagging behind the one that gave the head. Either way: ask again later,
   * never roll back on it.
   */
  private async canonical(ref: { number: bigint; hash: Hex }): Promise<boolean> {
    const answer = await this.reader.isCanonical(ref)
    if (answer === null) throw missingBlock(ref.number)
    return answer
  }

  /** Whether the block a cursor stands on is still the chain's; a disagreement counts only once confirmed. */
  private async stillStandsOn(ref: { number: bigint; hash: Hex }): Promise<boolean> {
    const seen = await this.reader.headerIfAny(ref.number)
    if (seen === null) throw missingBlock(ref.number)
    if (sameHash(seen.hash, ref.hash)) return true
    return !(await this.replacementConfirmed(ref, seen))
  }

  /**
   * Is this contradiction real? The node gave `seen` where the journal has `recorded`. A reorg
   * shows the same: asked again, the node gives the same other hash, and the block after it names
   * that hash as its parent. A node that answers otherwise contradicts itself (a faulty or lying
   * node, one node of a load balancer on another fork): NodeContradictionError, nothing rolled back.
   */
  private async replacementConfirmed(recorded: { number: bigint; hash: Hex }, seen: BlockHeader): Promise<boolean> {
    const again = await this.reader.headerIfAny(recorded.number)
    if (again === null) throw missingBlock(recorded.number)
    if (!sameHash(again.hash, seen.hash))
      throw new NodeContradictionError(`block ${recorded.number} is ${seen.hash}, then ${again.hash} (recorded: ${recorded.hash})`)
    const next = await this.reader.headerIfAny(recorded.number + 1n)
    if (next === null) throw missingBlock(recorded.number + 1n)
    if (!sameHash(next.parentHash, again.hash))
      throw new NodeContradictionError(
        `block ${recorded.number} is ${again.hash} (recorded: ${recorded.hash}), but block ${next.number} names ${next.parentHash} as its parent`,
      )
    return true
  }

  private cursorList(): Cursor[] {
    return [...this.active.keys()].map((id) => this.cursors.get(id)!)
  }

  /** Records ranges until every vault is at `confirmed`: the vaults furthest behind first, until they join the others. */
  private async catchUp(confirmed: bigint): Promise<void> {
    let rereads = 0
    while (!this.stopped) {
      const cursors = this.cursorList()
      const low = cursors.reduce((m, c) => (c.block < m ? c.block : m), cursors[0]!.block)
      const group = cursors.filter((c) => c.block === low)
      const ahead = cursors.filter((c) => c.block > low).reduce<bigint | undefined>((m, c) => (m === undefined || c.block < m ? c.block : m), undefined)
      const range = nextRange(low, ahead !== undefined && ahead < confirmed ? ahead : confirmed, this.chain.max_block_range)
      if (!range) return
      // The block the group stands on must still be the chain's (one request per distinct hash, usually one).
      let replaced = false
      for (const hash of new Set(group.map((c) => c.hash))) {
        if (hash !== null && !(await this.stillStandsOn({ number: low, hash }))) {
          replaced = true
          break
        }
      }
      if (replaced) {
        await this.rollBack()
        continue
      }
      const standing = group.find((c) => c.hash !== null) ?? group[0]!
      let batch: RangeBatch
      try {
        batch = await collectRange(this.reader, this.fetcher, {
          vaults: group.map((c) => this.active.get(c.vaultId)!.followed),
          from: range.from,
          to: range.to,
          previous: cursorBlock(standing),
          progress: new Map(group.map((c) => [c.vaultId, c.progress])),
        })
      } catch (e) {
        // The chain moved under the read: read again (a replaced cursor block is found above).
        if (e instanceof ReorgDuringReadError && ++rereads <= 3) {
          this.log.warn({ block: e.blockNumber }, 'chain source: a block changed while its range was read; reading it again')
          continue
        }
        throw e
      }
      rereads = 0
      try {
        await this.write(group, batch)
      } catch (e) {
        if (!(e instanceof CursorMovedError)) throw e
        this.log.warn({ vaults: e.vaultIds }, `chain source: ${e.message}`)
        this.cursors = await readCursors(this.deps.db, [...this.active.keys()])
      }
    }
  }

  /** One range in one transaction: the records through the importer, the cursors, the journal. */
  private async write(group: Cursor[], batch: RangeBatch): Promise<void> {
    const sourceOf = (id: string) => this.active.get(id)!.source
    // The file's USD price (if any) on every snapshot: live values are the newest snapshot's.
    const snapshots: VaultSnapshot[] = batch.snapshots.map((s) => ({ ...s, base_asset_price_usd: sourceOf(s.vault_id).metadata.base_asset_price_usd }))
    const newest = new Map(snapshots.map((s) => [s.vault_id, s])) // sorted by time: the last one wins
    // A vault gets its row with its first snapshot, with that snapshot's values: no other snapshot is recorded.
    const created = group.filter((c) => !this.known.has(c.vaultId) && newest.has(c.vaultId)).map((c) => c.vaultId)
    const vaults = created.map((id) => {
      const s = newest.get(id)!
      return { ...vaultRecord(sourceOf(id), s), base_asset_price_usd: s.base_asset_price_usd }
    })
    const document = validateImportDocument({ vaults, vault_snapshots: snapshots, transactions: batch.transactions })
    const ranges = group.map((c) => {
      const open = new Set(c.progress.open.map((o) => o.transaction.id))
      const mine = batch.transactions.filter((t) => t.vault_id === c.vaultId)
      return {
        vaultId: c.vaultId,
        previous: c,
        progress: batch.progress.get(c.vaultId)!,
        insertedTransactions: mine.filter((t) => !open.has(t.id)).map((t) => t.id),
        completedTransactions: mine.filter((t) => open.has(t.id)).map((t) => t.id),
        snapshotTimes: snapshots.filter((s) => s.vault_id === c.vaultId).map((s) => s.as_of),
      }
    })
    const now = this.deps.clock()
    await writeRange(this.deps.db, {
      chain: { name: this.chain.name, chainId: this.chain.chain_id, head: this.reader.head ?? batch.block.number, error: this.leftOut },
      from: batch.from,
      block: batch.block,
      vaults: ranges,
      document,
      now,
    })
    this.lastStateWrite = now.getTime()
    this.errorRecorded = false
    for (const r of ranges)
      this.cursors.set(r.vaultId, { ...r.previous, block: batch.block.number, hash: batch.block.hash, timestamp: batch.block.timestamp, progress: r.progress })
    for (const id of created) this.known.add(id)
    for (const w of batch.warnings) this.log.warn(`chain source: ${w}`)
    this.log.debug(
      { from: batch.from, to: batch.to, vaults: group.length, transactions: batch.transactions.length, snapshots: snapshots.length },
      'chain source: range recorded',
    )
    this.observe()
    if (batch.transactions.length + snapshots.length > 0) this.deps.onDataChanged?.()
  }

  /**
   * The block a cursor stands on was replaced (confirmed): finds the newest journaled range start
   * that is still the chain's and rolls every range after it back (src/sources/store.ts rollBack).
   * When none is (a reorg deeper than the journal, or a node on another chain), nothing is rolled
   * back: DeepReorgError stops the chain (status `stopped`) until the node agrees with the journal
   * again; erasing what the journal cannot restore is an operator's decision.
   */
  private async rollBack(): Promise<void> {
    const ids = [...this.active.keys()]
    const deepest = this.cursorList().reduce((m, c) => (c.block > m ? c.block : m), 0n)
    // Stopped already: the cursor check above has said it is still replaced; the journal is not walked again each poll.
    if (this.pause?.status === 'stopped' && this.deepReorg) throw this.deepReorg
    const starts = await journalStarts(this.deps.db, ids)
    let keep: bigint | undefined
    for (const s of starts) {
      if (s.hash === null || (await this.canonical({ number: s.block, hash: s.hash }))) {
        keep = s.block
        break
      }
    }
    if (keep === undefined) throw (this.deepReorg = new DeepReorgError(starts.at(-1)?.block ?? deepest, deepest))
    const now = this.deps.clock()
    const result = await rollBack(this.deps.db, { vaultIds: ids, keep, now })
    this.log.warn(
      { keep: String(keep), replacedUpTo: String(deepest), ...result },
      'chain source: reorg below the confirmed blocks; the ranges after the fork were rolled back and are read again',
    )
    sourceReorgs.inc({ chain: this.chain.name })
    this.cursors = await readCursors(this.deps.db, ids)
    this.observe()
    this.deps.onDataChanged?.()
  }

  private observe(): void {
    const head = this.reader.head
    const cursors = this.cursorList()
    if (cursors.length === 0) return
    const synced = cursors.reduce((m, c) => (c.block < m ? c.block : m), cursors[0]!.block)
    sourceSyncedBlock.set({ chain: this.chain.name }, Number(synced))
    if (head !== null) {
      sourceHeadBlock.set({ chain: this.chain.name }, Number(head))
      sourceLagBlocks.set({ chain: this.chain.name }, Number(head - synced))
    }
  }

  private onError(e: unknown): void {
    const pause = pauseOf(e)
    if (pause) {
      this.beginPause(pause)
      void this.recordError(pause.message, pause.status)
      return
    }
    // One line per distinct failure every few seconds at most (the logger's repeat limiter, src/core/log.ts).
    const message = describeRpcError(e)
    this.log.warn(`chain source: ${message}; trying again`)
    void this.recordError(message)
  }

  /** A pause's first failure logs it and raises the gauge; the same pause again is quiet (it is retried at every poll). */
  private beginPause(pause: { status: 'degraded' | 'stopped'; reason: string; message: string }): void {
    if (this.pause?.reason === pause.reason) return
    if (this.pause) sourcePaused.set({ chain: this.chain.name, reason: this.pause.reason }, 0)
    this.pause = { status: pause.status, reason: pause.reason, since: this.deps.clock() }
    sourcePaused.set({ chain: this.chain.name, reason: pause.reason }, 1)
    if (pause.status === 'stopped') this.log.error({ reason: pause.reason }, `chain source: ${pause.message}`)
    else this.log.warn({ reason: pause.reason }, `chain source: ${pause.message}`)
  }

  /** The chain was followed without a pause: ends the one under way (true if there was one). */
  private endPause(): boolean {
    const pause = this.pause
    if (!pause) return false
    this.pause = null
    this.deepReorg = undefined
    sourcePaused.set({ chain: this.chain.name, reason: pause.reason }, 0)
    this.log.info(
      { reason: pause.reason, pausedMs: this.deps.clock().getTime() - pause.since.getTime() },
      'chain source: the node agrees with the recorded blocks again; following resumed',
    )
    return true
  }

  private async recordError(message: string, status?: ChainFollowStatus): Promise<void> {
    this.errorRecorded = true
    await recordChainState(this.deps.db, this.chain.name, this.chain.chain_id, { error: { message, at: this.deps.clock() }, status }).catch(() => {})
  }
}

const missingBlock = (n: bigint) => new Error(`the node has no block ${n} (behind, or its chain is shorter); asking again at the next poll`)
