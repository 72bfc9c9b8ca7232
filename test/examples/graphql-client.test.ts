import { execFile } from 'node:child_process'
import { cp, mkdir, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packageRoot } from '../../src/core/paths.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'
import { listen } from '../support/live.js'

// Decisions §15 "Typed clients": the GraphQL Code Generator config of docs/graphql-clients.md
// (examples/graphql-client/codegen.ts) runs against schema.graphql, the small client it types
// compiles, and its trusted documents are served by id by a gateway that runs nothing else.

const bin = (name: string) => path.join(packageRoot, 'node_modules', '.bin', name)

function run(file: string, args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env: { ...process.env, NO_COLOR: '1' } }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    )
  })
}

describe(`the typed client example (${testBackend})`, () => {
  // Inside the package, so that the example resolves this package's node_modules.
  const root = path.join(packageRoot, 'test-output', `graphql-client-${testBackend}-${process.pid}`)
  const example = path.join(root, 'examples', 'graphql-client')
  let t: TestApp | undefined
  let stop: (() => Promise<void>) | undefined
  beforeAll(async () => {
    await rm(root, { recursive: true, force: true })
    await mkdir(path.join(root, 'examples'), { recursive: true })
    await cp(path.join(packageRoot, 'examples', 'graphql-client'), example, { recursive: true, filter: (src) => !src.includes(`${path.sep}gql`) })
    await cp(path.join(packageRoot, 'schema.graphql'), path.join(root, 'schema.graphql'))
  })
  afterAll(async () => {
    await stop?.()
    await t?.close()
    await rm(root, { recursive: true, force: true })
  })

  it('generates the types and the trusted documents, and the client type-checks with the scalars mapped', async () => {
    const generated = await run(bin('graphql-codegen'), ['--config', 'codegen.ts'], example)
    expect(generated.code, generated.output).toBe(0)
    const documents = JSON.parse(await readFile(path.join(example, 'src', 'gql', 'persisted-documents.json'), 'utf8')) as Record<string, string>
    expect(Object.values(documents)).toEqual(['query VaultCard($id: ID!) { vault(id: $id) { composition { asOf } id name status tvl tvlUsd } }'])
    const checked = await run(bin('tsc'), ['-p', 'tsconfig.json'], example)
    expect(checked, checked.output).toEqual({ code: 0, output: '' })
    // A Decimal typed as a number would not compile: the mapping is what the client relies on.
    const types = await readFile(path.join(example, 'src', 'gql', 'graphql.ts'), 'utf8')
    expect(types).toContain('tvl: string, tvlUsd: string | null, composition: { asOf: string | null } | null')
  })

  it('asks a trusted-only gateway by document id, and gets the vault', async () => {
    t = await createTestApp({ GRAPHQL_DOCUMENTS_FILE: path.join(example, 'src', 'gql', 'persisted-documents.json'), GRAPHQL_TRUSTED_ONLY: 'true' })
    await insertVault(t.db.prisma, 'typed-1', { name: 'Typed', tvl: '12.5', status: 'paused' })
    const server = await listen(t.app)
    stop = server.stop
    // The example's own module, compiled above (its types are the generated ones, checked there).
    type Card = { id: string; name: string; status: string; tvl: string; tvlUsd: string | null; composition: { asOf: string | null } | null }
    const client = (await import(path.join(example, 'src', 'dashboard.ts'))) as {
      fetchVaultCard(base: string, variables: { id: string }): Promise<{ vault: Card | null }>
      tvlOf(card: Card): string
      statusOf(card: Card): string
      asOfOf(card: Card): string | null
    }
    const data = await client.fetchVaultCard(server.base, { id: 'typed-1' })
    expect(data).toEqual({ vault: { id: 'typed-1', name: 'Typed', status: 'paused', tvl: '12.5', tvlUsd: '12.5', composition: { asOf: null } } })
    expect([client.tvlOf(data.vault!), client.statusOf(data.vault!), client.asOfOf(data.vault!)]).toEqual(['12.5', 'paused', null])
  })
})
