import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDatabase, type Database } from '../../src/db/client.js'
import { parseSourcesConfig } from '../../src/sources/config.js'
import { startSourceFollower, type SourceFollower } from '../../src/sources/follower.js'
import { anvilSkip, anvilSuiteTitle, CHAIN_ID, startAnvil, TestChain, type Anvil } from '../support/anvil.js'
import { freshStorage, testBackend } from '../support/db.js'
import { embeddedDataDir, startGatewayProcess, type GatewayProcess } from '../support/process.js'
import { valueWhen } from '../support/eventually.js'

// The follower as an operator runs it: `vaultgate start` with VAULT_SOURCES_FILE follows the
// chains, and with PostgreSQL one instance at a time does: when the one that follows dies, another
// takes over within 30 s (the lock's session ends with the process; the others ask every 10 s).

const skip = anvilSkip()

describe.skipIf(skip)(anvilSuiteTitle(`the gateway follows VAULT_SOURCES_FILE (anvil, ${testBackend})`, skip), () => {
  let anvil: Anvil
  let chain: TestChain
  let dir: string
  let vault: Address
  let alice: Address, bob: Address
  let file: string
  let gateway: GatewayProcess | undefined
  let storageEnv: Record<string, string>
  let postgresUrl: string | undefined

  const document = () => ({
    chains: { anvil: { chain_id: CHAIN_ID, rpc_url: anvil.url, confirmations: 2, poll_interval_ms: 100, requests_per_second: 1000 } },
    vaults: [
      {
        id: 'usd-4626',
        chain: 'anvil',
        address: vault,
        kind: 'erc4626',
        from_block: 1,
        name: 'Test USD',
        symbol: 'vgUSD',
        base_asset: 'tUSD',
        status: 'active',
        perf_fee_bps: 1000,
        api_endpoint: 'https://vaults.example/api',
      },
    ],
  })

  beforeAll(async () => {
    anvil = await startAnvil()
    chain = new TestChain(anvil.url, anvil.accounts)
    ;[, alice, bob] = anvil.accounts as [Address, Address, Address]
    ;({ vault } = await chain.deployAll())
    await chain.fund(alice, vault, 123_450_000n)
    await chain.deposit(alice, vault, 123_450_000n)
    await chain.mine(2)
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-sources-'))
    file = path.join(dir, 'sources.json')
    await writeFile(file, JSON.stringify(document()))
    const storage = await freshStorage()
    if (storage.mode === 'postgres') {
      postgresUrl = storage.url
      storageEnv = { DATABASE_URL: storage.url }
    } else storageEnv = { DATA_DIR: await embeddedDataDir(), SEED_DEMO: 'false' }
  })

  afterAll(async () => {
    await gateway?.stop('SIGKILL')
    await anvil?.stop()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('follows the chains of VAULT_SOURCES_FILE: the vault answers with its on-chain values, /metrics with the lag', async () => {
    gateway = await startGatewayProcess({ ...storageEnv, VAULT_SOURCES_FILE: file })
    const url = gateway.url
    const body = await valueWhen(
      'the vault recorded',
      async () => (await fetch(`${url}/v1/vaults/usd-4626`)).json(),
      (b: { tvl?: string }) => b.tvl === '123.45',
    )
    expect(body).toMatchObject({ id: 'usd-4626', chain: 'anvil', chain_id: String(CHAIN_ID), tvl: '123.45', share_price: '1', contract: { address: vault } })
    const metrics = await valueWhen(
      'the lag exported',
      async () => (await fetch(`${url}/metrics`)).text(),
      (text) => /vaultgate_source_lag_blocks\{chain="anvil"\} 2\n/.test(text),
    )
    expect(metrics).toMatch(/^vaultgate_source_follower 1$/m)
    expect(metrics).toMatch(new RegExp(`^vaultgate_source_head_block\\{chain="anvil"\\} ${await chain.blockNumber()}$`, 'm'))
    // The freshness contract's sources (decisions §10): the follower's state, as /v1/status answers it.
    const status = await (await fetch(`${url}/v1/status`)).json()
    expect(status.sources).toEqual([
      expect.objectContaining({
        name: 'chain:anvil',
        chain: 'anvil',
        chain_id: CHAIN_ID,
        vault_ids: ['usd-4626'],
        head_block: String(await chain.blockNumber()),
        lag_blocks: 2,
        last_error: null,
      }),
    ])
    expect(status.data_as_of).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/))
    expect(gateway.output()).toContain(`"chain":"anvil"`)
    expect(gateway.output()).not.toContain(anvil.url) // an RPC URL may carry a key: never logged
  })

  it.skipIf(testBackend !== 'postgres')('runs on one instance at a time: when it dies, another takes over within 30 s', async () => {
    // A second instance on the same database: it waits for the lock the gateway holds.
    const db: Database = await openDatabase({
      storage: { mode: 'postgres', url: postgresUrl! },
      pool: { max: 4, connectTimeoutMs: 5000, idleTimeoutMs: 1000, statementTimeoutMs: 30_000 },
    })
    let standby: SourceFollower | undefined
    try {
      standby = startSourceFollower({ sources: parseSourcesConfig(document()), db: db.prisma, lock: { connection: { connectionString: postgresUrl } } })
      const holders = () =>
        db.prisma.$queryRawUnsafe<{ application_name: string }[]>(
          `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
           WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()`,
        )
      await new Promise((r) => setTimeout(r, 1500)) // it has asked for the lock by now
      expect(standby.following).toBe(false)
      expect(await holders()).toEqual([{ application_name: 'vaultgate-sources' }])

      // The follower's process dies: its connections close and PostgreSQL releases the lock.
      await gateway!.stop('SIGKILL')
      gateway = undefined
      const died = Date.now()
      await chain.fund(bob, vault, 1_000_000n)
      await chain.deposit(bob, vault, 1_000_000n)
      await chain.mine(2)
      await valueWhen(
        'the standby follows',
        async () => standby!.following,
        (following) => following,
      )
      const [row] = await valueWhen(
        "Bob's deposit recorded by the standby",
        () => db.prisma.$queryRawUnsafe<{ tvl: string }[]>(`SELECT trim_scale(tvl)::text AS tvl FROM vaults WHERE id = 'usd-4626'`),
        (rows) => rows[0]?.tvl === '124.45',
      )
      const tookOver = Date.now() - died
      console.log(`[takeover] the standby recorded the next block ${tookOver} ms after the follower died`)
      expect(row!.tvl).toBe('124.45')
      expect(tookOver).toBeLessThan(30_000)
      expect(await holders()).toEqual([{ application_name: 'vaultgate-sources' }])
    } finally {
      await standby?.stop()
      await db.close()
    }
  })
})
