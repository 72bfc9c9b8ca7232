import type { Db } from '../db/client.js'
import { writeDocument, type ImportCounts } from '../importer/write.js'
import { generateDemoDataset, type DemoHints } from './dataset.js'
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
  db: Db,
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
  // Read back like on every later start, so the first start suggests the same wallets as the next.
  return { seeded: true, counts, hints: await demoHintsFromDatabase(db) }
}

/**
 * The start's hints, from the data alone (so every start over the same data prints the same ones):
 * a few vault ids and the contract of the first of them with a chain id, the wallet with pending
 * redeems in the most vaults, and two open positions in other wallets and vaults, the most active first.
 */
export async function demoHintsFromDatabase(db: Db): Promise<DemoHints> {
  const { vaultIds, contract, pending, positions } = await readHintRows(db)
  const wallets: DemoHints['wallets'] = []
  const [p] = pending
  if (p) wallets.push({ address: p.address, vaultId: p.vault_ids[0]!, note: `pending redeems in ${p.vault_ids.join(', ')}` })
  const open = positions.filter((h) => h.address !== p?.address)
  const first = open[0]
  const other = open.find((h) => h.vault_id !== first?.vault_id && h.address !== first?.address)
  for (const h of [first, other]) if (h) wallets.push({ address: h.address, vaultId: h.vault_id, note: `open position, ${h.n} transactions` })
  return contract ? { vaultIds, wallets, contract } : { vaultIds, wallets }
}
