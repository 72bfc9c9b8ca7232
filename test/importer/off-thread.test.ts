import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import { validateImportDocument } from '../../src/importer/document.js'
import { parseOffThread } from '../../src/importer/off-thread.js'
import { importSource } from '../../src/importer/write.js'
import { testBackend, testDatabase } from '../support/db.js'
import { explorerDocument } from '../support/explorer-data.js'

// The worker path of a large import (src/importer/off-thread.ts) refuses and writes exactly as the
// in-process one (test/importer/import.test.ts covers the rules themselves).

const bytes = (text: string) => new TextEncoder().encode(text)

const refusal = (f: () => unknown) => {
  try {
    f()
  } catch (e) {
    return { code: (e as { code?: string }).code, message: (e as Error).message }
  }
  throw new Error('not refused')
}

describe(`an import parsed in a worker thread (${testBackend})`, () => {
  let db: Database
  beforeAll(async () => {
    db = await testDatabase()
  })
  afterAll(async () => {
    await db.close()
  })

  it('refuses what is not JSON, and an invalid document, with the in-process sentences', async () => {
    await expect(parseOffThread(bytes('{"vaults": ['), { notJson: 'doc.json is not valid JSON.' })).rejects.toMatchObject({
      code: 'bad_request',
      message: 'doc.json is not valid JSON.',
    })
    const invalid = { ...explorerDocument, transactions: [{ ...explorerDocument.transactions[0], amount: '1e5' }, { id: 'x' }] }
    const expected = refusal(() => validateImportDocument(invalid))
    expect(expected.message).toMatch(/^transactions\[0\]\.amount: /)
    await expect(parseOffThread(bytes(JSON.stringify(invalid)))).rejects.toMatchObject(expected)
  })

  it('writes the document as the in-process import does, and names unknown vaults the same way', async () => {
    const source = await parseOffThread(bytes(JSON.stringify(explorerDocument)))
    expect(await importSource(source, db.prisma, { maxChunkRows: 3 })).toEqual({
      vaults: explorerDocument.vaults.length,
      compositions: explorerDocument.compositions.length,
      vault_snapshots: 0,
      transactions: explorerDocument.transactions.length,
    })
    const orphans = {
      transactions: Array.from({ length: 7 }, (_, i) => ({ ...explorerDocument.transactions[0], id: `orphan-${i}`, vault_id: `nowhere-${i % 2}` })),
    }
    await expect(importSource(await parseOffThread(bytes(JSON.stringify(orphans))), db.prisma)).rejects.toMatchObject({
      code: 'bad_request',
      message:
        'transactions[0].vault_id: unknown vault "nowhere-0"; transactions[1].vault_id: unknown vault "nowhere-1"; transactions[2].vault_id: unknown vault "nowhere-0"; transactions[3].vault_id: unknown vault "nowhere-1"; transactions[4].vault_id: unknown vault "nowhere-0"; and 2 more problems',
    })
  })
})
