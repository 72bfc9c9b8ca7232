import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import pg from 'pg'
import { readLocalMigrations } from '../src/db/migrate.js'
import { emptyPostgres, testBackend } from './support/db.js'
import { runCli, startGatewayProcess, type GatewayProcess, embeddedDataDir } from './support/process.js'
import { answered } from './support/bodies.js'

const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/)

describe('the vaultgate command', () => {
  it('lists its commands', async () => {
    const r = await runCli(['--help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/vaultgate start\s+Serve the API/)
    expect(r.stdout).toMatch(/vaultgate migrate\s+/)
    expect(r.stdout).toMatch(/vaultgate import FILE\s+/)
  })

  it('rejects a bad configuration with one message per value and exit code 1', async () => {
    const r = await runCli(['start'], { PORT: '99999', SEED_DEMO: 'perhaps' })
    expect(r.code).toBe(1)
    expect(r.stderr).toBe('vaultgate: Invalid configuration:\n  PORT: must be an integer from 0 to 65535\n  SEED_DEMO: must be true or false\n')
    expect(r.stdout).toBe('')
  })

  it('says in one sentence that the database cannot be reached', async () => {
    const r = await runCli(['migrate'], { DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/none', DB_CONNECT_TIMEOUT_MS: '1000' })
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/^vaultgate: Cannot reach the database \(PostgreSQL at 127\.0\.0\.1:1\/none\): .+\n$/)
    noStack(r.stderr)
  })

  it('rejects an unknown command as a usage error', async () => {
    const r = await runCli(['frobnicate'])
    expect(r.code).toBe(2)
    expect(r.stderr).toBe("vaultgate: unknown command 'frobnicate'\nRun `vaultgate --help` for the commands.\n")
  })
})

// One embedded gateway process, shared by the tests below (booting PGlite takes a few seconds).
describe.runIf(testBackend === 'pglite')('an embedded gateway process', () => {
  let dataDir: string
  let gw: GatewayProcess

  beforeAll(async () => {
    dataDir = await embeddedDataDir('vaultgate-boot-')
    gw = await startGatewayProcess({ DATA_DIR: dataDir, SEED_DEMO: 'false' })
  })
  afterAll(async () => {
    if (gw.child.exitCode === null) await gw.stop('SIGKILL')
    await rm(dataDir, { recursive: true, force: true })
  })

  it('is healthy, ready and serves GraphQL', async () => {
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200)
    const ready = await fetch(`${gw.url}/readyz`)
    expect(await ready.json()).toMatchObject({ status: 'ok', data: { storage: 'embedded', migrations: 'applied' } })
    const res = await fetch(`${gw.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query":"{ vault(id: \\"x\\") { id } }"}',
    })
    expect(await res.json()).toEqual(answered({ vault: null }))
  })

  it('keeps a second process out of its data directory', async () => {
    const migrate = await runCli(['migrate'], { DATA_DIR: dataDir })
    expect(migrate).toEqual({
      code: 0,
      stdout: `The gateway at ${gw.url} owns the data directory and applied its migrations when it started; nothing to do.\n`,
      stderr: '',
    })
    const file = path.join(dataDir, 'doc.json')
    await writeFile(file, '{"vaults":[]}')
    const imp = await runCli(['import', file], { DATA_DIR: dataDir })
    expect(imp.code).toBe(1)
    expect(imp.stderr).toMatch(/^vaultgate: The data directory is in use by the gateway at http:\/\/.+; set ADMIN_TOKEN/)
  })

  it('shuts down cleanly on SIGTERM and releases the data directory', async () => {
    expect(existsSync(path.join(dataDir, 'vaultgate.lock'))).toBe(true)
    expect(await gw.stop('SIGTERM')).toBe(0)
    expect(existsSync(path.join(dataDir, 'vaultgate.lock'))).toBe(false)
    const again = await runCli(['migrate'], { DATA_DIR: dataDir })
    expect(again).toMatchObject({ code: 0, stdout: 'The database is up to date.\n' })
  })
})

describe('importing a file from the command line', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-import-'))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('refuses a corrupt file and a bad document in one sentence, writing nothing', async () => {
    const env = { DATA_DIR: await embeddedDataDir('vaultgate-import-'), SEED_DEMO: 'false' }
    // Piped work that lasts over 5 s says where it is on stderr (src/core/progress.ts), as a slow
    // machine's may: the sentence is what remains without those lines.
    const importCli = async (args: string[], e: Record<string, string>) => {
      const r = await runCli(args, e)
      return { ...r, raw: r.stderr, stderr: r.stderr.replace(/^(?!vaultgate: ).*\n/gm, '') }
    }
    await writeFile(path.join(dir, 'corrupt.json'), '{"vaults": [')
    const corrupt = await importCli(['import', path.join(dir, 'corrupt.json')], env)
    expect(corrupt).toMatchObject({ code: 1, stderr: `vaultgate: ${path.join(dir, 'corrupt.json')} is not valid JSON.\n` })

    await writeFile(path.join(dir, 'bad.json'), JSON.stringify({ transactions: [{ id: 't1' }] }))
    const bad = await importCli(['import', path.join(dir, 'bad.json')], env)
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/^vaultgate: transactions\[0\]\.\w+: .+\n$/)
    noStack(bad.raw)

    const missing = await importCli(['import', path.join(dir, 'nope.json')], env)
    expect(missing).toMatchObject({ code: 1, stderr: `vaultgate: Cannot read ${path.join(dir, 'nope.json')}: no such file.\n` })
  })
})

describe.runIf(testBackend === 'postgres')('a gateway process on PostgreSQL', () => {
  it('migrates an empty database at start and serves from it', async () => {
    const { url } = await emptyPostgres()
    const gw = await startGatewayProcess({ DATABASE_URL: url })
    try {
      const res = await fetch(`${gw.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"query":"{ vault(id: \\"x\\") { id } }"}',
      })
      expect(await res.json()).toEqual(answered({ vault: null }))
      expect(await (await fetch(`${gw.url}/readyz`)).json()).toMatchObject({ status: 'ok', data: { storage: 'postgres' } })
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      const { rows } = await client.query('SELECT count(*)::int AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL')
      await client.end()
      expect(rows[0].n).toBe((await readLocalMigrations()).length)
    } finally {
      expect(await gw.stop('SIGTERM')).toBe(0)
    }
  })
})
