import type { SourcesConfig } from './config.js'
import { readSourceState, type ChainFollowStatus, type SourceDb } from './store.js'

// The freshness contract's `sources` (decisions §10): one entry per chain of the sources file,
// from what the follower recorded in the database, so every instance answers the same (only one
// of them follows). The fields are those of the freshness status' SourceStatus (the performance
// history work, src/freshness/status.ts there), plus the chain id, the vaults and the last success:
// block numbers as decimal strings, times as Dates.

export interface SourceStatus {
  /** `chain:<name>`: each chain of VAULT_SOURCES_FILE is one source. */
  name: string
  chain: string
  chainId: number
  /** The vaults followed on it, as the sources file lists them. */
  vaultIds: string[]
  /**
   * `ok`; `degraded`: paused and retried by itself (the node contradicts itself about a recorded
   * block, or dates blocks ahead of the clock), nothing deleted; `stopped`: a reorg deeper than the
   * journal, nothing deleted, an operator decides. `lastError` says which.
   */
  status: ChainFollowStatus
  /** The chain's newest block when the follower last recorded something; null before that. */
  headBlock: string | null
  /** The newest block recorded for every vault of the chain; null before the first. */
  syncedBlock: string | null
  /** headBlock − syncedBlock: the confirmations plus how far behind the follower is. */
  lagBlocks: number | null
  /** The synced block's own time (not the wall clock); null while unknown. */
  syncedAt: Date | null
  /** When the follower last read and recorded without failing. */
  lastSuccessAt: Date | null
  /**
   * The last failure (one line, never a URL) and when; null once it has not failed since. A vault
   * left out at start (the chain contradicts the file) stays here until the file is fixed.
   */
  lastError: string | null
  lastErrorAt: Date | null
}

/** The status of every chain of `sources` ([] without a sources file). */
export async function sourcesStatus(db: SourceDb, sources: SourcesConfig | undefined): Promise<SourceStatus[]> {
  if (!sources) return []
  const { chains, cursors } = await readSourceState(
    db,
    sources.vaults.map((v) => v.id),
  )
  const stateOf = new Map(chains.map((c) => [c.chain, c]))
  const cursorOf = new Map(cursors.map((c) => [c.vault_id, c]))
  return Object.values(sources.chains).map((chain) => {
    const vaultIds = sources.vaults.filter((v) => v.chain === chain.name).map((v) => v.id)
    const state = stateOf.get(chain.name)
    const mine = vaultIds.map((id) => cursorOf.get(id))
    // The chain is synced as far as its furthest-behind vault (one without a cursor: not at all).
    let synced: { block: bigint; at: Date | null } | null = null
    if (mine.length > 0 && mine.every((c) => c !== undefined)) {
      const low = mine.reduce((m, c) => (BigInt(c!.block_number) < BigInt(m!.block_number) ? c : m))!
      synced = { block: BigInt(low.block_number), at: low.block_timestamp === null ? null : new Date(Number(low.block_timestamp) * 1000) }
    }
    const head = state && state.head_block !== null ? BigInt(state.head_block) : null
    return {
      name: `chain:${chain.name}`,
      chain: chain.name,
      chainId: chain.chain_id,
      vaultIds,
      status: state?.status ?? 'ok',
      headBlock: head === null ? null : head.toString(),
      syncedBlock: synced === null ? null : synced.block.toString(),
      lagBlocks: head === null || synced === null ? null : Number(head - synced.block),
      syncedAt: synced?.at ?? null,
      lastSuccessAt: state?.last_success_at ?? null,
      lastError: state?.last_error ?? null,
      lastErrorAt: state?.last_error_at ?? null,
    }
  })
}
