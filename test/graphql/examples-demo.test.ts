import { getAddress } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import type { Database } from '../../src/db/client.js'
import { generateDemoDataset } from '../../src/demo/dataset.js'
import { demoHintsFromDatabase } from '../../src/demo/seed.js'
import { exampleIdsFromHints } from '../../src/graphql/examples.js'
import { importDocument } from '../../src/importer/write.js'
import { testBackend, testDatabase } from '../support/db.js'

// GraphiQL's VaultByAddress example on the demo data: the gateway fills it from the demo hints (as
// src/server.ts does), and the page's own example finds the demo vault. The demo's vault records
// suffice (the hints read vaults first); its 140k snapshots would only slow this down.

describe(`GraphiQL's vaultByAddress example on the demo vaults (${testBackend})`, () => {
  let db: Database
  let app: App
  const demo = generateDemoDataset({ now: new Date('2026-11-21T12:00:00.000Z') })
  beforeAll(async () => {
    db = await testDatabase()
    await importDocument({ vaults: demo.vaults, compositions: [], vault_snapshots: [], transactions: [] }, db.prisma)
    app = createApp({ config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }), db, examples: demoHintsFromDatabase(db.prisma).then(exampleIdsFromHints) })
    await app.ready
  })
  afterAll(async () => {
    await app?.close()
    await db?.close()
  })

  it('names a demo contract, and running it answers that vault', async () => {
    const html = await (await app.fetch(new Request('http://vaultgate.test/graphql', { headers: { accept: 'text/html' } }))).text()
    const document: string = JSON.parse(/renderYogaGraphiQL\([^,]+, (\{.*\})\);/.exec(html)![1]!).defaultQuery
    const hints = await demoHintsFromDatabase(db.prisma)
    const vault = demo.vaults.find((v) => v.id === hints.contract!.vaultId)!
    // The first demo vault by id that has a chain id.
    expect(vault.id).toBe(demo.vaults.filter((v) => v.chain_id !== null).sort((a, b) => (a.id < b.id ? -1 : 1))[0]!.id)
    expect(document).toContain(`vaultByAddress(chainId: "eip155:${vault.chain_id}", address: "${vault.contract.address}")`)
    const res = await app.fetch(
      new Request('http://vaultgate.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
        body: JSON.stringify({ query: document, operationName: 'VaultByAddress' }),
      }),
    )
    const body = (await res.json()) as { data?: { vaultByAddress: unknown }; errors?: unknown }
    expect(body.errors).toBeUndefined()
    expect(body.data!.vaultByAddress).toEqual({
      id: vault.id,
      name: vault.name,
      chainId: vault.chain_id,
      caip10: `eip155:${vault.chain_id}:${getAddress(vault.contract.address)}`,
      contract: { address: vault.contract.address },
    })
  })
})
