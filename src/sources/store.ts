import type { Prisma, PrismaClient } from '../generated/prisma/client.js'
import { announceDataChange } from '../importer/changes.js'
import type { ImportDocument, ImportVault } from '../importer/document.js'
import { recomputeDataAsOf, syncLiveValues, writeImport, type ImportCounts } from '../importer/write.js'
import { beginChangeCapture, CHANGES_TABLE, emitCapturedChanges, emitRemovals, takenBack } from '../webhooks/emit.js'
import type { VaultProgress } from './collect.js'
import type { Address } from './config.js'
import type { BlockRef, Hex } from './mapping.js'

// Every SQL statement of the chain source. The follower (src/sources/follower.ts) writes a range
// of blocks in ONE transaction: the records through the importer (so webhook events, the change
// NOTIFY and the live-values rule come with them), the vaults' cursors, and a journal of what the
// range wrote, which a rollback after a reorg deeper than the confirmations undoes.

export type SourceDb = Pick<PrismaClient, '$transaction' | '$queryRawUnsafe' | '$executeRawUnsafe'>

/** A batch may be large (a catch-up range of 2000 blocks): the import's own limits. */
const TRANSACTION_OPTIONS = { maxWait: 60_000, timeout: 600_000 }

/**
 * Blocks of journal kept behind the newest cursor: a reorg at most this deep below the recorded
 * blocks is rolled back exactly (the deepest reorg of Ethereum's proof of stake was 7 blocks).
 */
export const JOURNAL_BLOCKS = 1024n

export interface Cursor {
  vaultId: string
  chainId: number
  address: Address
  /** The last block recorded. */
  block: bigint
  /** Null before the first range. */
  hash: Hex | null
  timestamp: bigint | null
  progress: VaultProgress
}

/** The block a cursor stands on, as collectRange wants it (null before the first range). */
export const cursorBlock = (c: Pick<Cursor, 'block' | 'hash' | 'timestamp'>): BlockRef | null =>
  c.hash === null || c.timestamp === null ? null : { number: c.block, hash: c.hash, timestamp: c.timestamp }

const EMPTY_PROGRESS: VaultProgress = { lastSnapshotAt: null, open: [] }

interface CursorRow {
  vault_id: string
  chain_id: number
  address: string
  block_number: string
  block_hash: string | null
  block_timestamp: string | null
  progress: VaultProgress
}

const CURSOR_COLUMNS = `vault_id, chain_id, address, block_number::text, block_hash, block_timestamp::text, progress`

const cursorOf = (r: CursorRow): Cursor => ({
  vaultId: r.vault_id,
  chainId: r.chain_id,
  address: r.address as Address,
  block: BigInt(r.block_number),
  hash: r.block_hash as Hex | null,
  timestamp: r.block_timestamp === null ? null : BigInt(r.block_timestamp),
  progress: r.progress,
})

export async function readCursors(db: SourceDb, vaultIds: readonly string[]): Promise<Map<string, Cursor>> {
  const rows = await db.$queryRawUnsafe<CursorRow[]>(`SELECT ${CURSOR_COLUMNS} FROM source_cursors WHERE vault_id = ANY($1::text[])`, vaultIds)
  return new Map(rows.map((r) => [r.vault_id, cursorOf(r)]))
}

/**
 * The cursors of the vaults to follow, created at `from_block − 1` for a vault seen for the first
 * time. A vault id that now names another contract (or chain) starts over from its from_block:
 * its journal goes, its records stay (their ids name the chain and transaction they came from).
 * Answers the cursors and the ids that started over.
 */
export async function openCursors(
  db: SourceDb,
  vaults: readonly { id: string; chain_id: number; address: Address; from_block: number }[],
  now: Date,
): Promise<{ cursors: Map<string, Cursor>; restarted: string[] }> {
  const rows = JSON.stringify(
    vaults.map((v) => ({ vault_id: v.id, chain_id: v.chain_id, address: v.address, block_number: String(v.from_block - 1), progress: EMPTY_PROGRESS })),
  )
  return db.$transaction(async (tx) => {
    const restarted = await tx.$queryRawUnsafe<{ vault_id: string }[]>(
      `WITH r AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(vault_id text, chain_id int, address text, block_number bigint, progress jsonb)),
       moved AS (
         UPDATE source_cursors c SET chain_id = r.chain_id, address = r.address, block_number = r.block_number, block_hash = NULL,
           block_timestamp = NULL, progress = r.progress, updated_at = $2::timestamptz
         FROM r WHERE c.vault_id = r.vault_id AND (c.chain_id, c.address) IS DISTINCT FROM (r.chain_id, r.address)
         RETURNING c.vault_id
       ),
       forgotten AS (DELETE FROM source_journal j USING moved WHERE j.vault_id = moved.vault_id)
       SELECT vault_id FROM moved`,
      rows,
      now.toISOString(),
    )
    await tx.$executeRawUnsafe(
      `INSERT INTO source_cursors (vault_id, chain_id, address, block_number, progress, updated_at)
       SELECT vault_id, chain_id, address, block_number, progress, $2::timestamptz
       FROM jsonb_to_recordset($1::jsonb) AS r(vault_id text, chain_id int, address text, block_number bigint, progress jsonb)
       ON CONFLICT (vault_id) DO NOTHING`,
      rows,
      now.toISOString(),
    )
    const found = await tx.$queryRawUnsafe<CursorRow[]>(
      `SELECT ${CURSOR_COLUMNS} FROM source_cursors WHERE vault_id = ANY($1::text[])`,
      vaults.map((v) => v.id),
    )
    return { cursors: new Map(found.map((r) => [r.vault_id, cursorOf(r)])), restarted: restarted.map((r) => r.vault_id) }
  })
}

/** Live values of the vaults that have a row, as amount strings (trailing zeros trimmed, as the import writes them). */
export async function vaultLiveValues(
  db: SourceDb,
  ids: readonly string[],
): Promise<Map<string, { tvl: string; share_price: string; base_asset_price_usd: string | null }>> {
  const rows = await db.$queryRawUnsafe<{ id: string; tvl: string; share_price: string; base_asset_price_usd: string | null }[]>(
    `SELECT id, trim_scale(tvl)::text AS tvl, trim_scale(share_price)::text AS share_price, trim_scale(base_asset_price_usd)::text AS base_asset_price_usd
     FROM vaults WHERE id = ANY($1::text[])`,
    ids,
  )
  return new Map(rows.map(({ id, ...values }) => [id, values]))
}

/** Writes vault records (the sources file's metadata) through the importer, in their own transaction. */
export function writeVaultRecords(db: SourceDb, vaults: ImportVault[], importedAt: Date): Promise<ImportCounts> {
  return db.$transaction(
    (tx) => writeImport(tx, { vaults, compositions: [], vault_snapshots: [], transactions: [] }, { importedAt: importedAt.toISOString() }),
    TRANSACTION_OPTIONS,
  )
}

/** What one range wrote for one vault, and the cursor it started from (the journal row). */
export interface VaultRange {
  vaultId: string
  /** The cursor the range started from: the write fails unless it is still the stored one. */
  previous: Cursor
  progress: VaultProgress
  insertedTransactions: string[]
  completedTransactions: string[]
  snapshotTimes: string[]
}

/** Another writer moved a cursor this batch started from (a second follower during a lock handover): nothing was written. */
export class CursorMovedError extends Error {
  constructor(readonly vaultIds: string[]) {
    super(`the cursors of ${vaultIds.join(', ')} moved while the range was read (another follower?); nothing written`)
    this.name = 'CursorMovedError'
  }
}

/**
 * Writes one range of blocks for a group of vaults in one transaction: moves their cursors to
 * `block` (only from the cursors the range started from: compare and set, first, so a concurrent
 * writer waits on the rows and then finds them moved), writes the records (if any) through the importer,
 * journals the range and forgets journal rows older than JOURNAL_BLOCKS, and records the chain's
 * head for /v1/status.
 */
export async function writeRange(
  db: SourceDb,
  input: {
    /** `error`: what stays the chain's last error after this success (a vault left out at start), or null. */
    chain: { name: string; chainId: number; head: bigint; error: { message: string; at: Date } | null }
    from: bigint
    block: BlockRef
    vaults: VaultRange[]
    document: ImportDocument
    now: Date
  },
): Promise<ImportCounts> {
  const { chain, block, now } = input
  const at = now.toISOString()
  return db.$transaction(async (tx) => {
    const moved = await tx.$queryRawUnsafe<{ vault_id: string }[]>(
      `UPDATE source_cursors c SET block_number = $2::bigint, block_hash = $3, block_timestamp = $4::bigint, progress = r.progress, updated_at = $5::timestamptz
       FROM jsonb_to_recordset($1::jsonb) AS r(vault_id text, expected_number bigint, expected_hash text, progress jsonb)
       WHERE c.vault_id = r.vault_id AND c.block_number = r.expected_number AND c.block_hash IS NOT DISTINCT FROM r.expected_hash
       RETURNING c.vault_id`,
      JSON.stringify(
        input.vaults.map((v) => ({ vault_id: v.vaultId, expected_number: v.previous.block.toString(), expected_hash: v.previous.hash, progress: v.progress })),
      ),
      block.number.toString(),
      block.hash,
      block.timestamp.toString(),
      at,
    )
    if (moved.length !== input.vaults.length) {
      const done = new Set(moved.map((m) => m.vault_id))
      throw new CursorMovedError(input.vaults.map((v) => v.vaultId).filter((id) => !done.has(id)))
    }
    const { document } = input
    // A range without records (most blocks) writes only the cursors and journal: no change to announce.
    const empty = document.vaults.length + document.vault_snapshots.length + document.transactions.length + document.compositions.length === 0
    const counts = empty ? { vaults: 0, compositions: 0, vault_snapshots: 0, transactions: 0 } : await writeImport(tx, document, { importedAt: at })
    await tx.$executeRawUnsafe(
      `INSERT INTO source_journal (vault_id, from_block, to_block, to_hash, previous_block_number, previous_block_hash, previous_block_timestamp,
         previous_progress, inserted_transactions, completed_transactions, snapshot_times, created_at)
       SELECT r.vault_id, $2::bigint, $3::bigint, $4, r.previous_block_number, r.previous_block_hash, r.previous_block_timestamp, r.previous_progress,
         ARRAY(SELECT jsonb_array_elements_text(r.inserted)), ARRAY(SELECT jsonb_array_elements_text(r.completed)),
         ARRAY(SELECT jsonb_array_elements_text(r.snapshots)::timestamptz), $5::timestamptz
       FROM jsonb_to_recordset($1::jsonb) AS r(vault_id text, previous_block_number bigint, previous_block_hash text, previous_block_timestamp bigint,
         previous_progress jsonb, inserted jsonb, completed jsonb, snapshots jsonb)
       ON CONFLICT (vault_id, to_block) DO UPDATE SET from_block = EXCLUDED.from_block, to_hash = EXCLUDED.to_hash,
         previous_block_number = EXCLUDED.previous_block_number, previous_block_hash = EXCLUDED.previous_block_hash,
         previous_block_timestamp = EXCLUDED.previous_block_timestamp, previous_progress = EXCLUDED.previous_progress,
         inserted_transactions = EXCLUDED.inserted_transactions, completed_transactions = EXCLUDED.completed_transactions,
         snapshot_times = EXCLUDED.snapshot_times, created_at = EXCLUDED.created_at`,
      JSON.stringify(
        input.vaults.map((v) => ({
          vault_id: v.vaultId,
          previous_block_number: v.previous.block.toString(),
          previous_block_hash: v.previous.hash,
          previous_block_timestamp: v.previous.timestamp?.toString() ?? null,
          previous_progress: v.previous.progress,
          inserted: v.insertedTransactions,
          completed: v.completedTransactions,
          snapshots: v.snapshotTimes,
        })),
      ),
      input.from.toString(),
      block.number.toString(),
      block.hash,
      at,
    )
    await tx.$executeRawUnsafe(
      `DELETE FROM source_journal WHERE vault_id = ANY($1::text[]) AND to_block < $2::bigint`,
      input.vaults.map((v) => v.vaultId),
      (block.number - JOURNAL_BLOCKS).toString(),
    )
    await recordChainState(tx, chain.name, chain.chainId, { head: chain.head, successAt: now, error: chain.error, status: 'ok' })
    return counts
  }, TRANSACTION_OPTIONS)
}

/** The distinct cursors the journal can roll back to (what each kept range started from), newest first. */
export async function journalStarts(db: SourceDb, vaultIds: readonly string[]): Promise<Pick<Cursor, 'block' | 'hash' | 'timestamp'>[]> {
  const rows = await db.$queryRawUnsafe<{ n: string; hash: string | null; t: string | null }[]>(
    `SELECT DISTINCT previous_block_number::text AS n, previous_block_number AS sort, previous_block_hash AS hash, previous_block_timestamp::text AS t
     FROM source_journal WHERE vault_id = ANY($1::text[]) ORDER BY sort DESC`,
    vaultIds,
  )
  return rows.map((r) => ({ block: BigInt(r.n), hash: r.hash as Hex | null, timestamp: r.t === null ? null : BigInt(r.t) }))
}

export interface Rollback {
  /** The vaults whose ranges were taken back. */
  vaultIds: string[]
  /** Owners of the transactions deleted or reopened (for change notifications). */
  addresses: string[]
  transactionsDeleted: number
  redeemsReopened: number
  snapshotsDeleted: number
  /** The journal ranges undone (one per vault and range). */
  ranges: number
}

interface JournalRow {
  vault_id: string
  previous_block_number: string
  previous_block_hash: string | null
  previous_block_timestamp: string | null
  previous_progress: VaultProgress
  inserted_transactions: string[]
  completed_transactions: string[]
  snapshot_times: Date[]
}

/**
 * Takes back every journaled range of `vaultIds` that ends after block `keep`, in one
 * transaction: the transactions the ranges created are deleted, the redeems they completed or made
 * claimable are pending again (completed_at null; claimable again when they were before), their snapshots are deleted and the vaults' live values are
 * those of their newest remaining snapshot, and each cursor is back where its oldest undone range
 * started (with the progress it had there). Webhook endpoints get `transaction.removed` for each
 * deleted transaction, `transaction.status_changed` for each reopened redeem and `vault.updated`
 * for each vault that lost records; the transactions taken back start a new event generation (their
 * next events get new ids). The change NOTIFY tells every instance (caches, subscribers) to read again.
 */
export async function rollBack(db: SourceDb, input: { vaultIds: readonly string[]; keep: bigint; now: Date }): Promise<Rollback> {
  return db.$transaction(async (tx) => {
    // The cursors first, locked: a second follower (during a lock handover) waits, then finds nothing left to undo.
    await tx.$queryRawUnsafe(`SELECT vault_id FROM source_cursors WHERE vault_id = ANY($1::text[]) ORDER BY vault_id FOR UPDATE`, input.vaultIds)
    const rows = await tx.$queryRawUnsafe<JournalRow[]>(
      `SELECT vault_id, previous_block_number::text, previous_block_hash, previous_block_timestamp::text, previous_progress,
         inserted_transactions, completed_transactions, snapshot_times
       FROM source_journal WHERE vault_id = ANY($1::text[]) AND to_block > $2::bigint ORDER BY vault_id, to_block`,
      input.vaultIds,
      input.keep.toString(),
    )
    const result: Rollback = { vaultIds: [], addresses: [], transactionsDeleted: 0, redeemsReopened: 0, snapshotsDeleted: 0, ranges: rows.length }
    if (rows.length === 0) return result
    const inserted = [...new Set(rows.flatMap((r) => r.inserted_transactions))]
    const insertedSet = new Set(inserted)
    const completed = [...new Set(rows.flatMap((r) => r.completed_transactions))].filter((id) => !insertedSet.has(id))
    const snapshots = rows.flatMap((r) => r.snapshot_times.map((t) => ({ vault_id: r.vault_id, as_of: new Date(t).toISOString() })))
    // Each vault goes back to where its oldest undone range started (rows are in to_block order).
    const restore = new Map<string, JournalRow>()
    for (const r of rows) if (!restore.has(r.vault_id)) restore.set(r.vault_id, r)
    result.vaultIds = [...restore.keys()]

    const capture = await beginChangeCapture(tx)
    const touched = await tx.$queryRawUnsafe<{ id: string; address: string }[]>(`SELECT id, address FROM transactions WHERE id = ANY($1::text[])`, [
      ...inserted,
      ...completed,
    ])
    result.addresses = [...new Set(touched.map((r) => r.address))]
    // A redeem the undone ranges completed or made claimable goes back to the status the restored
    // progress holds for it: claimable when it was so before those ranges (decisions §14), else pending.
    const claimableBefore = new Set(
      [...restore.values()].flatMap((r) => (r.previous_progress.open ?? []).filter((o) => o.transaction.status === 'claimable').map((o) => o.transaction.id)),
    )
    const targets = JSON.stringify(completed.map((id) => ({ id, status: claimableBefore.has(id) ? 'claimable' : 'pending' })))
    const REOPENED = `FROM jsonb_to_recordset($1::jsonb) AS r(id text, status text)
       WHERE t.id = r.id AND t.status IN ('completed', 'claimable') AND t.status::text <> r.status`
    if (capture?.transactions)
      await tx.$executeRawUnsafe(
        `INSERT INTO ${CHANGES_TABLE} (kind, id, previous_status)
         SELECT 'transaction', t.id, t.status::text FROM transactions t, ${REOPENED.slice('FROM '.length)}
         ON CONFLICT (kind, id) DO NOTHING`,
        targets,
      )
    if (capture) await emitRemovals(tx, capture, inserted)
    result.transactionsDeleted = await tx.$executeRawUnsafe(`DELETE FROM transactions WHERE id = ANY($1::text[])`, inserted)
    result.redeemsReopened = await tx.$executeRawUnsafe(
      `UPDATE transactions t SET status = r.status::"TransactionStatus", completed_at = NULL ${REOPENED}`,
      targets,
    )
    result.snapshotsDeleted = await tx.$executeRawUnsafe(
      `DELETE FROM vault_snapshots s USING jsonb_to_recordset($1::jsonb) AS r(vault_id text, as_of timestamptz)
       WHERE s.vault_id = r.vault_id AND s.as_of = r.as_of`,
      JSON.stringify(snapshots),
    )
    await syncLiveValues(tx, result.vaultIds, capture?.vaults ?? false)
    // A vault that lost records changed even when its live values did not (its history did).
    const lost = [
      ...new Set(rows.filter((r) => r.inserted_transactions.length + r.completed_transactions.length + r.snapshot_times.length > 0).map((r) => r.vault_id)),
    ]
    if (capture?.vaults)
      await tx.$executeRawUnsafe(
        `INSERT INTO ${CHANGES_TABLE} (kind, id) SELECT 'vault_values', id FROM unnest($1::text[]) AS id ON CONFLICT (kind, id) DO NOTHING`,
        lost,
      )
    // The ranges taken back may have held the newest data (decisions §10 data_as_of).
    await recomputeDataAsOf(tx)
    await tx.$executeRawUnsafe(
      `UPDATE source_cursors c SET block_number = r.block_number, block_hash = r.block_hash, block_timestamp = r.block_timestamp,
         progress = r.progress, updated_at = $2::timestamptz
       FROM jsonb_to_recordset($1::jsonb) AS r(vault_id text, block_number bigint, block_hash text, block_timestamp bigint, progress jsonb)
       WHERE c.vault_id = r.vault_id`,
      JSON.stringify(
        [...restore.values()].map((r) => ({
          vault_id: r.vault_id,
          block_number: r.previous_block_number,
          block_hash: r.previous_block_hash,
          block_timestamp: r.previous_block_timestamp,
          progress: r.previous_progress,
        })),
      ),
      input.now.toISOString(),
    )
    await tx.$executeRawUnsafe(`DELETE FROM source_journal WHERE vault_id = ANY($1::text[]) AND to_block > $2::bigint`, input.vaultIds, input.keep.toString())
    if (capture) await emitCapturedChanges(tx, capture)
    await takenBack(tx, [...inserted, ...completed])
    // Subscribers hear of the vaults and of the redeems pending again (a deleted transaction has
    // nothing left to show; its wallet's history simply no longer lists it).
    const reopened = new Set(completed)
    await announceDataChange(tx, { vaults: result.vaultIds, transactions: touched.filter((r) => reopened.has(r.id)) })
    return result
  }, TRANSACTION_OPTIONS)
}

/**
 * Records what the follower saw of a chain: its head, a success, an error (one line, no URL).
 * `error: null` clears the last error (a success after it); left out, the recorded one stays.
 */
export async function recordChainState(
  db: Pick<SourceDb, '$executeRawUnsafe'> | Prisma.TransactionClient,
  chain: string,
  chainId: number,
  seen: { head?: bigint; successAt?: Date; error?: { message: string; at: Date } | null; status?: ChainFollowStatus },
): Promise<void> {
  const keepError = seen.error === undefined
  await db.$executeRawUnsafe(
    `INSERT INTO source_chains (chain, chain_id, head_block, last_success_at, last_error, last_error_at, status)
     VALUES ($1, $2, $3::bigint, $4::timestamptz, $5, $6::timestamptz, coalesce($8, 'ok'))
     ON CONFLICT (chain) DO UPDATE SET chain_id = EXCLUDED.chain_id,
       head_block = coalesce(EXCLUDED.head_block, source_chains.head_block),
       last_success_at = coalesce(EXCLUDED.last_success_at, source_chains.last_success_at),
       last_error = CASE WHEN $7 THEN source_chains.last_error ELSE EXCLUDED.last_error END,
       last_error_at = CASE WHEN $7 THEN source_chains.last_error_at ELSE EXCLUDED.last_error_at END,
       status = coalesce($8, source_chains.status)`,
    chain,
    chainId,
    seen.head?.toString() ?? null,
    seen.successAt?.toISOString() ?? null,
    seen.error?.message ?? null,
    seen.error?.at.toISOString() ?? null,
    keepError,
    seen.status ?? null,
  )
}

/**
 * How a chain is followed: `ok`; `degraded` (paused by itself and retried: the node contradicts
 * itself, or serves block times ahead of the clock); `stopped` (a reorg deeper than the journal:
 * nothing is erased, an operator decides).
 */
export type ChainFollowStatus = 'ok' | 'degraded' | 'stopped'

export interface ChainStateRow {
  chain: string
  chain_id: number
  head_block: string | null
  last_success_at: Date | null
  last_error: string | null
  last_error_at: Date | null
  status: ChainFollowStatus
}

/** The chains' recorded states, and per vault its cursor (block and block time). */
export async function readSourceState(
  db: SourceDb,
  vaultIds: readonly string[],
): Promise<{ chains: ChainStateRow[]; cursors: { vault_id: string; block_number: string; block_timestamp: string | null }[] }> {
  const chains = await db.$queryRawUnsafe<ChainStateRow[]>(
    `SELECT chain, chain_id, head_block::text, last_success_at, last_error, last_error_at, status FROM source_chains ORDER BY chain`,
  )
  const cursors = await db.$queryRawUnsafe<{ vault_id: string; block_number: string; block_timestamp: string | null }[]>(
    `SELECT vault_id, block_number::text, block_timestamp::text FROM source_cursors WHERE vault_id = ANY($1::text[])`,
    vaultIds,
  )
  return { chains, cursors }
}
