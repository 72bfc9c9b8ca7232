import type { SourcesConfig } from './config.js'
import { readSourceState, type SourceDb } from './store.js'

// The freshness contract's `sources` (decisions §10): one entry per chain of the sources file,
// from what the follower recorded in the database, so every instance answers the same (only one
// of them follows). Block numbers are JSON numbers (no chain is near 2^53 blocks).

export interface SourceStatus {
  /** `chain:<name>`: each chain of VAULT_SOURCES_FILE is one source. */
  name: string
  kind: 'chain'
  chain: string
  chain_id: number
  /** The vaults followed on it, as the sources file lists them. */
  vault_ids: string[]
  /** The chain's newest block when the follower last recorded something (null before that). */
  head_block: number | null
  /** The newest block recorded for every vault of the chain (null before the first). */
  synced_block: number | null
  /** That block's time, RFC 3339 (null when not known yet). */
  synced_at: string | null
  /** head_block − synced_block: the confirmations plus how far behind the follower is. */
  lag_blocks: number | null
  last_success_at: string | null
  /** The last failure (one line, never a URL), kept after later successes; compare the times. */
  last_error: string | null
  last_error_at: string | null
}

const iso = (d: Date | null) => (d === null ? null : new Date(d).toISOString())

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
    let synced: { block: bigint; time: string | null } | null = null
    if (mine.length > 0 && mine.every((c) => c !== undefined)) {
      const low = mine.reduce((m, c) => (BigInt(c!.block_number) < BigInt(m!.block_number) ? c : m))!
      synced = { block: BigInt(low.block_number), time: low.block_timestamp === null ? null : new Date(Number(low.block_timestamp) * 1000).toISOString() }
    }
    const head = state && state.head_block !== null ? BigInt(state.head_block) : null
    return {
      name: `chain:${chain.name}`,
      kind: 'chain',
      chain: chain.name,
      chain_id: chain.chain_id,
      vault_ids: vaultIds,
      head_block: head === null ? null : Number(head),
      synced_block: synced === null ? null : Number(synced.block),
      synced_at: synced?.time ?? null,
      lag_blocks: head === null || synced === null ? null : Number(head - synced.block),
      last_success_at: iso(state?.last_success_at ?? null),
      last_error: state?.last_error ?? null,
      last_error_at: iso(state?.last_error_at ?? null),
    }
  })
}
