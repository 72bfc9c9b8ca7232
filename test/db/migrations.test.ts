import { createHash } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Database } from '../../src/db/client.js'
import { openDatabase } from '../../src/db/client.js'
import { isUpToDate, readLocalMigrations } from '../../src/db/migrate.js'
import { emptyPostgres, testBackend } from '../support/db.js'

describe(`migrations (${testBackend})`, () => {
  let db: Database
  let firstRun: string[]

  beforeAll(async () => {
    // freshStorage() is already migrated for postgres (a template clone); start from an empty one instead.
    const storage = testBackend === 'postgres' ? await emptyPostgres() : ({ mode: 'embedded', dataDir: 'memory://' } as const)
    db = await openDatabase({ storage, pool: { max: 2, connectTimeoutMs: 5000, idleTimeoutMs: 1000, statementTimeoutMs: 0 } })
    firstRun = await db.migrate()
  })
  afterAll(() => db.close())

  it('applies every checked-in migration to an empty database and records it like prisma migrate deploy', async () => {
    const local = await readLocalMigrations()
    expect(firstRun).toEqual(local.map((m) => m.name))
    const rows = await db.prisma.$queryRaw<{ migration_name: string; checksum: string; applied_steps_count: number; finished: boolean }[]>`
      SELECT migration_name, checksum, applied_steps_count, finished_at IS NOT NULL AS finished FROM _prisma_migrations ORDER BY migration_name`
    expect(rows).toEqual(
      local.map((m) => ({
        migration_name: m.name,
        checksum: createHash('sha256').update(m.sql).digest('hex'),
        applied_steps_count: 1,
        finished: true,
      })),
    )
  })

  it('backfills one vault snapshot per existing vault from its live values', async () => {
    // The migrations before vault_snapshots, a vault written by that schema, then the migration itself.
    const local = await readLocalMigrations()
    const at = local.findIndex((m) => m.name.endsWith('_vault_snapshots'))
    expect(at).toBeGreaterThan(0)
    const pglite = new PGlite()
    try {
      for (const m of local.slice(0, at)) await pglite.exec(m.sql)
      await pglite.exec(`INSERT INTO vaults (id, name, chain, symbol, base_asset, base_asset_price_usd, status, tvl, share_price, perf_fee_bps,
          contract_address, api_endpoint, updated_at)
        VALUES ('old-usdc', 'Old', 'ethereum', 'vU', 'USDC', 0.9998, 'active', 1234567.000000000000000001, 1.05, 0, '0xaa', 'https://x', '2026-01-02T03:04:05.678Z'),
               ('old-eth', 'Old ETH', 'base', 'vE', 'ETH', 3000, 'paused', 0, 1, 0, '0xbb', 'https://y', '2026-02-03T00:00:00Z')`)
      await pglite.exec(local[at]!.sql)
      const { rows } = await pglite.query(
        `SELECT vault_id, to_char(as_of AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS as_of, share_price::text, tvl::text, base_asset_price_usd::text
         FROM vault_snapshots ORDER BY vault_id`,
      )
      expect(rows).toEqual([
        {
          vault_id: 'old-eth',
          as_of: '2026-02-03T00:00:00.000Z',
          share_price: '1.000000000000000000',
          tvl: '0.000000000000000000',
          base_asset_price_usd: '3000.000000000000000000',
        },
        {
          vault_id: 'old-usdc',
          as_of: '2026-01-02T03:04:05.678Z',
          share_price: '1.050000000000000000',
          tvl: '1234567.000000000000000001',
          base_asset_price_usd: '0.999800000000000000',
        },
      ])
    } finally {
      await pglite.close()
    }
  })

  it('applies nothing the second time', async () => {
    expect(await db.migrate()).toEqual([])
  })

  it('creates the indexes the access paths rely on, including the partial ones', async () => {
    const rows = await db.prisma.$queryRaw<{ indexname: string; indexdef: string }[]>`
      SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`
    const byName = Object.fromEntries(rows.map((r) => [r.indexname, r.indexdef]))
    expect(byName.api_keys_one_active_per_wallet).toMatch(/CREATE UNIQUE INDEX .* \(wallet\) WHERE \(revoked_at IS NULL\)/)
    expect(byName.transactions_history_idx).toMatch(/\(address, vault_id, "timestamp" DESC, id DESC\)/)
    expect(byName.transactions_pending_redeems_idx).toMatch(
      /WHERE \(\(type = 'redeem'::"TransactionType"\) AND \(\(status = 'pending'::"TransactionStatus"\) OR \(status = 'claimable'::"TransactionStatus"\)\)\)/,
    )
    expect(byName.transactions_wallet_history_idx).toMatch(/\(address, "timestamp" DESC, id DESC\)/)
    expect(byName.transactions_redeem_queue_idx).toMatch(
      /\(vault_id, "timestamp", id, amount\) WHERE \(\(type = 'redeem'::"TransactionType"\) AND \(status = 'pending'::"TransactionStatus"\)\)/,
    )
    expect(byName.composition_snapshots_vault_id_as_of_key).toMatch(/UNIQUE INDEX .* \(vault_id, as_of DESC\)/)
    expect(byName.api_keys_digest_key).toMatch(/UNIQUE INDEX .* \(digest\)/)
  })

  it('enforces one unrevoked key per wallet in the database itself', async () => {
    const insert = (id: string, digest: string) =>
      db.prisma.$executeRaw`INSERT INTO api_keys (id, wallet, key_prefix, digest, created_at, expires_at)
        VALUES (${id}::uuid, '0x0000000000000000000000000000000000000001', 'vaultgate', ${digest}, now(), now() + interval '30 days')`
    await insert('00000000-0000-4000-8000-000000000001', 'd1')
    await expect(insert('00000000-0000-4000-8000-000000000002', 'd2')).rejects.toThrow(/Unique constraint|unique/i)
  })

  it('notices an edited migration (checksum mismatch) and a missing one', async () => {
    const local = await readLocalMigrations()
    const applied = local.map((m) => ({ migration_name: m.name, checksum: m.checksum }))
    expect(isUpToDate(local, applied)).toBe(true)
    expect(
      isUpToDate(
        local,
        applied.map((a) => ({ ...a, checksum: 'x' })),
      ),
    ).toBe(false)
    expect(isUpToDate(local, [])).toBe(false)
  })
})
