import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readLocalMigrations } from '../src/db/migrate.js'
import { packageRoot } from '../src/core/paths.js'
import { emptyPostgres, testBackend } from './support/db.js'
import { explorerDocument, fullVault } from './support/explorer-data.js'
import { gatewayStorage, runCli, startGatewayProcess } from './support/process.js'

const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/)

describe('the vaultgate command line', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-cli-'))
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('prints its version and nothing else: no gateway, no data directory', async () => {
    const dataDir = path.join(dir, 'never')
    const { version } = JSON.parse(await readFile(path.join(packageRoot, 'package.json'), 'utf8'))
    for (const flag of ['--version', '-v']) {
      expect(await runCli([flag], { DATA_DIR: dataDir })).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
    }
    expect(existsSync(dataDir)).toBe(false)
  })

  it('has a help per command, listing its options', async () => {
    const migrate = await runCli(['migrate', '--help'])
    expect(migrate.code).toBe(0)
    expect(migrate.stdout).toMatch(/^Usage: vaultgate migrate \[options\]\n/)
    expect(migrate.stdout).toMatch(/--dry-run +list the pending migrations without applying them/)
    expect(migrate.stdout).toMatch(/--status +list the applied and the pending migrations/)
    const start = await runCli(['help', 'start'])
    expect(start.code).toBe(0)
    expect(start.stdout).toMatch(/--port <number> +HTTP port \(overrides PORT/)
    expect(start.stdout).toMatch(/--host <address> +interface to listen on \(overrides HOST/)
    const load = await runCli(['import', '--help'])
    expect(load.code).toBe(0)
    expect(load.stdout).toContain('Load a JSON document of vaults, compositions, vault_snapshots and transactions')
    expect(load.stdout).toContain('\n  {"vaults": […], "compositions": […], "vault_snapshots": […], "transactions": […]}\n')
    expect(load.stdout).toContain('\n  vault_snapshots  share price and TVL history {"vault_id","as_of","share_price","tvl","base_asset_price_usd"}\n')
  })

  it('refuses unknown commands and options with a suggestion and exit code 2, touching nothing', async () => {
    const env = { DATA_DIR: path.join(dir, 'never') }
    expect(await runCli(['strat'], env)).toEqual({
      code: 2,
      stdout: '',
      stderr: "vaultgate: unknown command 'strat'\n(Did you mean start?)\nRun `vaultgate --help` for the commands.\n",
    })
    expect(await runCli(['start', '--prot', '5000'], env)).toEqual({
      code: 2,
      stdout: '',
      stderr: "vaultgate: unknown option '--prot'\n(Did you mean --port?)\nRun `vaultgate start --help` for its usage.\n",
    })
    expect(await runCli(['migrate', '--dryrun'], env)).toMatchObject({ code: 2, stderr: expect.stringContaining('(Did you mean --dry-run?)') })
    expect(await runCli(['start', '--port', 'http'], env)).toMatchObject({
      code: 2,
      stderr:
        "vaultgate: option '--port <number>' argument 'http' is invalid. It must be an integer from 0 to 65535.\nRun `vaultgate start --help` for its usage.\n",
    })
    expect(await runCli(['migrate', '--dry-run', '--status'], env)).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("option '--dry-run' cannot be used with option '--status'"),
    })
    expect(await runCli(['import'], env)).toMatchObject({
      code: 2,
      stderr: "vaultgate: missing required argument 'file'\nRun `vaultgate import --help` for its usage.\n",
    })
    expect(await runCli(['allowlist', 'ad'], env)).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^vaultgate: unknown allowlist action 'ad'\n\(Did you mean add\?\)\n/),
    })
    expect(existsSync(env.DATA_DIR)).toBe(false)
  })

  it('reports a bad LOG_LEVEL as one configuration line, not a logger stack trace', async () => {
    const r = await runCli(['migrate'], { LOG_LEVEL: 'warning', DATA_DIR: path.join(dir, 'never') })
    expect(r).toEqual({
      code: 1,
      stdout: '',
      stderr: 'vaultgate: Invalid configuration:\n  LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent\n',
    })
  })

  it('reports a missing AUTH_JWKS_FILE with the other configuration problems, before anything is written', async () => {
    const dataDir = path.join(dir, 'never')
    const jwks = path.join(dir, 'missing-jwks.json')
    const r = await runCli(['start'], { DATA_DIR: dataDir, AUTH_JWKS_FILE: jwks, SEED_DEMO: 'perhaps' })
    expect(r).toEqual({
      code: 1,
      stdout: '',
      stderr: `vaultgate: Invalid configuration:\n  SEED_DEMO: must be true or false\n  AUTH_JWKS_FILE: cannot read a JSON Web Key Set from ${jwks} (ENOENT)\n`,
    })
    expect(existsSync(dataDir)).toBe(false)
  })

  it.runIf(testBackend === 'postgres')('reports a PostgreSQL database that does not exist as a configuration problem, with the others', async () => {
    const url = new URL((await emptyPostgres()).url)
    url.pathname = '/vaultgate_no_such_db'
    const r = await runCli(['start'], { DATABASE_URL: url.toString(), LOG_LEVEL: 'warning' })
    expect(r).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'vaultgate: Invalid configuration:\n  LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent\n' +
        `  DATABASE_URL: the database "vaultgate_no_such_db" does not exist on PostgreSQL at ${url.hostname}:${url.port || 5432}; create it (createdb vaultgate_no_such_db) or fix the URL\n`,
    })
  })

  it('documents check: a valid documents file passes; a bad id, a wrong hash and a document the schema refuses are each named', async () => {
    const sha = (text: string) => createHash('sha256').update(text).digest('hex')
    const good = 'query Card($id: ID!) { vault(id: $id) { id name tvl } }'
    const unknownField = 'query Bad { vault(id: "x") { nope } }'
    const valid = path.join(dir, 'persisted-documents.json')
    await writeFile(valid, JSON.stringify({ [`sha256:${sha(good)}`]: good }))
    expect(await runCli(['documents', 'check', valid])).toEqual({ code: 0, stdout: `${valid}: 1 document(s), all valid against the schema.\n`, stderr: '' })
    const invalid = path.join(dir, 'bad-documents.json')
    await writeFile(invalid, JSON.stringify({ [sha(unknownField)]: unknownField, [`sha256:${sha(good)}`]: `${good} `, 'md5:1': good }))
    expect(await runCli(['documents', 'check', invalid])).toEqual({
      code: 1,
      stdout: [
        `error  "sha256:${sha(good)}": is not the SHA-256 of its document (${sha(`${good} `)})`,
        'error  "md5:1": not a SHA-256 id ("sha256:<64 hex digits>" or the bare hex)',
        `error  "sha256:${sha(unknownField)}": Cannot query field "nope" on type "Vault". Did you mean "name"?`,
        '',
      ].join('\n'),
      stderr: `vaultgate: ${invalid}: 3 problem(s); the gateway would refuse to start with it or answer errors.\n`,
    })
    // The same file refuses a start, before anything is written.
    const dataDir = path.join(dir, 'never')
    const start = await runCli(['start'], { DATA_DIR: dataDir, GRAPHQL_DOCUMENTS_FILE: invalid })
    expect(start).toEqual({
      code: 1,
      stdout: '',
      stderr: [
        'vaultgate: Invalid configuration:',
        `  GRAPHQL_DOCUMENTS_FILE: "sha256:${sha(good)}": is not the SHA-256 of its document (${sha(`${good} `)})`,
        '  GRAPHQL_DOCUMENTS_FILE: "md5:1": not a SHA-256 id ("sha256:<64 hex digits>" or the bare hex)',
        '',
      ].join('\n'),
    })
    expect(existsSync(dataDir)).toBe(false)
  })

  it('says in one sentence, after the configuration checks, that the database server cannot be reached', async () => {
    const r = await runCli(['migrate', '--status'], { DATABASE_URL: 'postgresql://postgres@127.0.0.1:1/none', DB_CONNECT_TIMEOUT_MS: '1000' })
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/^vaultgate: Cannot reach the database \(PostgreSQL at 127\.0\.0\.1:1\/none\): .+\n$/)
    noStack(r.stderr)
  })
})

describe(`vaultgate migrate (${testBackend})`, () => {
  let dir: string
  let env: Record<string, string>
  let names: string[]
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-migrate-'))
    env = testBackend === 'postgres' ? { DATABASE_URL: (await emptyPostgres()).url } : { DATA_DIR: path.join(dir, 'data') }
    names = (await readLocalMigrations()).map((m) => m.name)
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('--dry-run and --status list what is pending on an empty database and apply nothing', async () => {
    expect(await runCli(['migrate', '--dry-run'], env)).toEqual({
      code: 0,
      stdout: `Would apply ${names.length} migration(s): ${names.join(', ')}\n`,
      stderr: '',
    })
    expect(await runCli(['migrate', '--status'], env)).toEqual({
      code: 0,
      stdout: `${names.map((n) => `pending  ${n}\n`).join('')}${names.length} migration(s) pending; \`vaultgate migrate\` applies them.\n`,
      stderr: '',
    })
    // Still pending: nothing was applied (and an embedded data directory was not even created).
    expect((await runCli(['migrate', '--dry-run'], env)).stdout).toBe(`Would apply ${names.length} migration(s): ${names.join(', ')}\n`)
    if (env.DATA_DIR) expect(existsSync(env.DATA_DIR)).toBe(false)
  })

  it('start refuses pending migrations when MIGRATE_ON_START is false, in one line', async () => {
    const r = await runCli(['start'], { ...env, MIGRATE_ON_START: 'false', SEED_DEMO: 'false', PORT: '0' })
    expect(r).toEqual({
      code: 1,
      stdout: '',
      stderr: `vaultgate: The database has ${names.length} pending migration(s) (${names.join(', ')}) and MIGRATE_ON_START is false; run \`vaultgate migrate\` first.\n`,
    })
    expect((await runCli(['migrate', '--dry-run'], env)).stdout).toBe(`Would apply ${names.length} migration(s): ${names.join(', ')}\n`)
  })

  it('applies them, then has nothing to do and exits 0', async () => {
    expect(await runCli(['migrate'], env)).toEqual({ code: 0, stdout: `Applied ${names.length} migration(s): ${names.join(', ')}\n`, stderr: '' })
    expect(await runCli(['migrate'], env)).toEqual({ code: 0, stdout: 'The database is up to date.\n', stderr: '' })
    expect(await runCli(['migrate', '--dry-run'], env)).toEqual({ code: 0, stdout: 'The database is up to date.\n', stderr: '' })
    expect(await runCli(['migrate', '--status'], env)).toEqual({
      code: 0,
      stdout: `${names.map((n) => `applied  ${n}\n`).join('')}The database is up to date.\n`,
      stderr: '',
    })
  })

  it('then start serves with MIGRATE_ON_START=false, and honours --port and --host over PORT and HOST', async () => {
    // PORT names a port already taken and HOST an address nothing listens on: the options must win.
    const taken: Server = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const takenPort = (taken.address() as { port: number }).port
    try {
      const gw = await startGatewayProcess({ ...env, MIGRATE_ON_START: 'false', SEED_DEMO: 'false', PORT: String(takenPort), HOST: '192.0.2.1' }, 60_000, [
        '--port',
        '0',
        '--host',
        '127.0.0.1',
      ])
      try {
        expect(gw.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
        expect(gw.url).not.toBe(`http://127.0.0.1:${takenPort}`)
        expect(await (await fetch(`${gw.url}/readyz`)).json()).toMatchObject({ status: 'ok', data: { migrations: 'applied' } })
      } finally {
        expect(await gw.stop('SIGTERM')).toBe(0)
      }
    } finally {
      taken.close()
    }
  })
})

describe(`vaultgate import (${testBackend})`, () => {
  const storage = gatewayStorage('vaultgate-cli-import-')

  it('counts every section in its summary, vault snapshots included', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-cli-import-'))
    try {
      const file = path.join(dir, 'doc.json')
      const vault_snapshots = ['2026-11-01T00:00:00.000Z', '2026-11-02T00:00:00.000Z', '2026-11-03T00:00:00.000Z'].map((as_of) => ({
        vault_id: fullVault.id,
        as_of,
        share_price: '1.01',
        tvl: '1000',
        base_asset_price_usd: null,
      }))
      await writeFile(file, JSON.stringify({ ...explorerDocument, vault_snapshots }))
      // stderr is left out: on a busy machine a piped import lasting 5 s prints a progress line there.
      expect(await runCli(['import', file], { ...storage(), LOG_LEVEL: 'warn' })).toMatchObject({
        code: 0,
        stdout: 'Imported 2 vault(s), 45 composition snapshot(s), 3 vault snapshot(s), 4 transaction(s).\n',
      })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
