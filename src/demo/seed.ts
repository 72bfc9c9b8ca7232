import type { Db } from '../db/client.js'
import { writeDocument, type ImportCounts } from '../importer/write.js'
import { demoHints, generateDemoDataset, type DemoHints } from './dataset.js'
import { hasVaults, readHintRows } from './store.js'

export interface SeedResult {
  seeded: boolean
  counts?: ImportCounts
  hints?: DemoHints
}

/**
 * Loads the demo dataset when the database has no vaults yet (docs/spec/decisions.md §2). `now` defaults to
 * the current time (hour-aligned by the generator) so "7d" windows and pending redeems look live.
 */
export async function seedDemoIfEmpty(
  db?: Db,
  opts: { seed?: number; now?: Date; onProgress?: (label: string, done?: number, total?: number) => void } = {},
): Promise<SeedResult> {
  if (await hasVaults(db)) return { seeded: false }
  const onProgress = opts.onProgress ?? (() => {})
  onProgress('Generating demo data')
  const now = opts.now ?? new Date()
  const doc = generateDemoDataset({ seed: opts.seed, now })
  // Imported "at" the dataset's now: vault records whose values are not its last snapshot's would be recorded then.
  // Written without validating again: the generator's output is valid and canonical (test/demo/demo.test.ts).
  const counts = await writeDocument(doc, db, { clock: () => now, onProgress: (p) => onProgress(`Loading demo ${p.kind}`, p.done, p.total) })
  return { seeded: true, counts, hints: demoHints(doc) }
}

/**
 * Hints for an already seeded database, read back cheaply (later starts must stay fast, so the
 * dataset is not regenerated): a few vault ids, the wallet with the most pending redeems and the
 * most active wallet.
 */
export async function demoHintsFromDatabase(db?: Db): Promise<DemoHints> {
  const { vaultIds, pending, active } = await readHintRows(db)
  const wallets: DemoHints['wallets'] = []
  for (const p of pending) wallets.push({ address: p.address, vaultId: p.vault_id, note: `pending redeems in ${p.vaults} vault(s)` })
  for (const a of active) wallets.push({ address: a.address, vaultId: a.vault_id, note: `${a.n} completed deposits` })
  return { vaultIds, wallets }
}
