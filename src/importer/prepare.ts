import { parseImportJson } from './json.js'
import { MAX_REPORTED, validateImportDocument, type ImportDocument, type ImportVault } from './document.js'

// An import as the writer (src/importer/write.ts) consumes it: a summary (the vault records, the
// sections' sizes, the vault ids the database must know) and the rows of each section as JSON
// chunks, one statement's parameter each. Made from a validated document either in this thread
// (importDocument, the chain source) or in a worker (src/importer/off-thread.ts): then the
// document's parse, validation and serialisation never run on the gateway's event loop, and the
// main thread only ever holds the chunk being written.

export type ChunkedSection = 'compositions' | 'vault_snapshots' | 'transactions'
export const CHUNKED_SECTIONS: readonly ChunkedSection[] = ['compositions', 'vault_snapshots', 'transactions']

/** A vault id the document uses without a record of it: its rows must name a vault the database has. */
export interface OutsideReference {
  id: string
  /** Rows that name it. */
  count: number
  /** The first MAX_REPORTED of them, as [section, row index]. */
  first: [ChunkedSection, number][]
}

export interface ImportSummary {
  vaults: ImportVault[]
  totals: Record<ChunkedSection, number>
  /** Distinct vault ids of the vault_snapshots section. */
  snapshotVaultIds: string[]
  /** Distinct vault ids of the compositions section (the change announced to subscribers). */
  compositionVaultIds: string[]
  /** The transactions written, by id and wallet (the change announced to subscribers, src/live/). */
  transactionRefs: { id: string; address: string }[]
  /** The newest snapshot, composition or transaction time of the document (freshness, decisions §10); null when none. */
  newestTime: string | null
  /** The same per vault id (each vault's data time, src/importer/write.ts); vaults without such rows are absent. */
  newestByVault: Record<string, string>
  outsideRefs: OutsideReference[]
}

export interface ImportSource {
  summary: ImportSummary
  /** The section's rows, `size` at a time, each chunk serialised as one JSON array. */
  chunks(section: ChunkedSection, size: number): AsyncIterable<{ json: string; rows: number }>
  /** Releases what holds the document (the worker); idempotent. */
  close(): void
}

export function summarize(doc: ImportDocument): ImportSummary {
  const inDocument = new Set(doc.vaults.map((v) => v.id))
  const outside = new Map<string, OutsideReference>()
  // Sections in the order their problems are reported (src/importer/write.ts checkVaultReferences).
  for (const section of ['compositions', 'vault_snapshots', 'transactions'] as const) {
    doc[section].forEach((r, i) => {
      if (inDocument.has(r.vault_id)) return
      let ref = outside.get(r.vault_id)
      if (!ref) outside.set(r.vault_id, (ref = { id: r.vault_id, count: 0, first: [] }))
      ref.count++
      if (ref.first.length < MAX_REPORTED) ref.first.push([section, i])
    })
  }
  return {
    vaults: doc.vaults,
    totals: { compositions: doc.compositions.length, vault_snapshots: doc.vault_snapshots.length, transactions: doc.transactions.length },
    snapshotVaultIds: [...new Set(doc.vault_snapshots.map((s) => s.vault_id))],
    compositionVaultIds: [...new Set(doc.compositions.map((c) => c.vault_id))],
    transactionRefs: doc.transactions.map((t) => ({ id: t.id, address: t.address })),
    ...newestDataTimes(doc),
    outsideRefs: [...outside.values()],
  }
}

/** The newest snapshot or transaction time (submitted or completed) of a document, and of each of its vaults; null / absent when none. */
function newestDataTimes(doc: ImportDocument): { newestTime: string | null; newestByVault: Record<string, string> } {
  const byVault = new Map<string, number>()
  const see = (vaultId: string, t: string | null | undefined) => {
    if (!t) return
    const ms = Date.parse(t)
    if (ms > (byVault.get(vaultId) ?? Number.NEGATIVE_INFINITY)) byVault.set(vaultId, ms)
  }
  for (const s of doc.vault_snapshots) see(s.vault_id, s.as_of)
  for (const c of doc.compositions) see(c.vault_id, c.as_of)
  for (const t of doc.transactions) {
    see(t.vault_id, t.timestamp)
    see(t.vault_id, t.completed_at)
  }
  const newestByVault: Record<string, string> = {}
  let newest = Number.NEGATIVE_INFINITY
  for (const [id, ms] of byVault) {
    newestByVault[id] = new Date(ms).toISOString()
    newest = Math.max(newest, ms)
  }
  return { newestTime: newest === Number.NEGATIVE_INFINITY ? null : new Date(newest).toISOString(), newestByVault }
}

/** The chunks of a section of a validated document. */
export function* sectionChunks(doc: ImportDocument, section: ChunkedSection, size: number): Generator<{ json: string; rows: number }> {
  const rows = doc[section] as unknown[]
  for (let i = 0; i < rows.length; i += size) {
    const chunk = rows.slice(i, i + size)
    yield { json: JSON.stringify(chunk), rows: chunk.length }
  }
}

/** A validated document as an import source, in this thread. */
export function sourceOf(doc: ImportDocument): ImportSource {
  return {
    summary: summarize(doc),
    async *chunks(section, size) {
      yield* sectionChunks(doc, section, size)
    },
    close() {},
  }
}

/** The bytes of a JSON document, parsed and validated (`bad_request` when it is not JSON or not valid). */
export function parseAndValidate(bytes: Uint8Array, notJson = 'The import document is not valid JSON.'): ImportDocument {
  return validateImportDocument(parseImportJson(new TextDecoder('utf-8', { fatal: false }).decode(bytes), notJson))
}
