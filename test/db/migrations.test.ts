import { createHash } from 'node:crypto'
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

  it('applies nothing the second time', async () => {
    expect(await db.migrate()).toEqual([])
  })

  it('creates the indexes the access paths rely on, including the partial ones', async () => {
    const rows = await db.prisma.$queryRaw<{ indexname: string; indexdef: string }[]>`
      SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`
    const byName = Object.fromEntries(rows.map((r) => [r.indexname, r.indexdef]))
    expect(byName.api_keys_one_active_per_wallet).toMatch(/CREATE UNIQUE INDEX .* \(wallet\) WHERE \(revoked_at IS NULL\)/)
    expect(byName.transactions_history_idx).toMatch(/\(address, vault_id, "timestamp" DESC, id DESC\)/)
    expect(byName.transactions_pending_redeems_idx).toMatch(/WHERE \(\(type = 'redeem'::"TransactionType"\) AND \(status = 'pending'::"TransactionStatus"\)\)/)
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
