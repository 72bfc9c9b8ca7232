import { createHash } from 'node:crypto'
import { readFile, readdir } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { bindMigrationAwareSqlAdapterFactory, type SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils'
import { migrationsDir, prismaSchemaPath } from '../core/paths.js'

// Migrations run through Prisma's own schema engine (the wasm build), driven over our driver
// adapter, so `_prisma_migrations` is exactly what `prisma migrate deploy` would write.

export interface LocalMigration {
  name: string
  sql: string
  checksum: string
}

interface WasmSchemaEngine {
  applyMigrations(input: unknown): Promise<{ appliedMigrationNames: string[] }>
  diff(input: unknown): Promise<{ exitCode: number; stdout: string }>
  free(): void
}

const noFilters = { externalTables: [], externalEnums: [] }

type EngineModule = typeof import('@prisma/schema-engine-wasm/schema_engine_bg')

// The JS glue holds one wasm instance per process (`__wbg_set_wasm`), and its bindings are not
// re-entrant. Module-level state is not enough: test runners may load this file more than once, so
// the instance and the queue that serialises engine work live on globalThis.
const shared = ((globalThis as Record<symbol, unknown>)[Symbol.for('vaultgate.schemaEngine')] ??= {
  module: undefined,
  queue: Promise.resolve(),
  timers: new Set(),
}) as { module: Promise<EngineModule> | undefined; queue: Promise<unknown>; timers: Set<NodeJS.Timeout> }

// The engine arms a 10 s timer for its internal timeouts (the advisory lock it takes around
// migrations) and never clears it: a one-shot `vaultgate migrate` waited for it ~10 s after its
// work was done. Once the work that armed them is over, its timers stop holding the process open.
function releaseTimers() {
  for (const timer of shared.timers) timer.unref()
  shared.timers.clear()
}

function serialized<T>(work: () => Promise<T>): Promise<T> {
  const run = shared.queue.then(work, work).finally(releaseTimers)
  shared.queue = run.catch(() => {})
  return run
}

/** The package is built for bundlers: in Node we instantiate the wasm with its JS glue as imports. */
function loadEngineModule() {
  shared.module ??= (async () => {
    const bg = await import('@prisma/schema-engine-wasm/schema_engine_bg')
    const require = createRequire(import.meta.url)
    const dir = path.dirname(require.resolve('@prisma/schema-engine-wasm'))
    const bytes = await readFile(path.join(dir, 'schema_engine_bg.wasm'))
    const imports = { ...(bg as unknown as WebAssembly.ModuleImports) }
    for (const name of Object.keys(imports).filter((n) => n.startsWith('__wbg_setTimeout_'))) {
      const arm = imports[name] as (...args: unknown[]) => NodeJS.Timeout
      imports[name] = (...args: unknown[]) => {
        const timer = arm(...args)
        shared.timers.add(timer)
        return timer
      }
    }
    const { instance } = await WebAssembly.instantiate(bytes, { './schema_engine_bg.js': imports })
    ;(bg as unknown as { __wbg_set_wasm(exports: unknown): void }).__wbg_set_wasm(instance.exports)
    ;(instance.exports as { __wbindgen_start?: () => void }).__wbindgen_start?.()
    return bg
  })()
  return shared.module
}

async function openEngine(factory: SqlMigrationAwareDriverAdapterFactory): Promise<WasmSchemaEngine> {
  const bg = await loadEngineModule()
  const schema = await readFile(prismaSchemaPath, 'utf8')
  const SchemaEngine = (bg as unknown as { SchemaEngine: { new: (...args: unknown[]) => Promise<WasmSchemaEngine> } }).SchemaEngine
  return SchemaEngine.new({ datamodels: [['schema.prisma', schema]] }, () => {}, bindMigrationAwareSqlAdapterFactory(factory))
}

export async function readLocalMigrations(): Promise<LocalMigration[]> {
  const entries = await readdir(migrationsDir, { withFileTypes: true })
  const dirs = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort()
  return Promise.all(
    dirs.map(async (name) => {
      const sql = await readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8')
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') }
    }),
  )
}

async function migrationList(local: LocalMigration[]) {
  const lockPath = path.join(migrationsDir, 'migration_lock.toml')
  return {
    baseDir: migrationsDir,
    lockfile: { path: 'migration_lock.toml', content: await readFile(lockPath, 'utf8').catch(() => null) },
    shadowDbInitScript: '',
    migrationDirectories: local.map((m) => ({
      path: m.name,
      migrationFile: { path: 'migration.sql', content: { tag: 'ok', value: m.sql } },
    })),
  }
}

export interface AppliedRow {
  migration_name: string
  checksum: string
}

/**
 * True when every local migration is recorded as finished with the same checksum. Lets a warm
 * start skip instantiating the schema engine (which costs about a second).
 */
export function isUpToDate(local: LocalMigration[], applied: AppliedRow[]): boolean {
  const done = new Map(applied.map((r) => [r.migration_name, r.checksum]))
  return local.every((m) => done.get(m.name) === m.checksum)
}

/** Applies pending migrations; returns the names applied (empty when up to date). */
export async function applyMigrations(factory: SqlMigrationAwareDriverAdapterFactory, applied: () => Promise<AppliedRow[]>): Promise<string[]> {
  const local = await readLocalMigrations()
  if (isUpToDate(local, await applied().catch(() => []))) return []
  return serialized(async () => {
    const engine = await openEngine(factory)
    try {
      const out = await engine.applyMigrations({ migrationsList: await migrationList(local), filters: noFilters })
      return out.appliedMigrationNames
    } finally {
      engine.free()
    }
  })
}

/**
 * SQL that takes the database from the checked-in migrations to prisma/schema.prisma, or ''
 * when they agree. Needs a shadow database (the factory's connectToShadowDb).
 */
export async function diffMigrationsToSchema(factory: SqlMigrationAwareDriverAdapterFactory): Promise<string> {
  const local = await readLocalMigrations()
  const schema = await readFile(prismaSchemaPath, 'utf8')
  return serialized(async () => {
    const engine = await openEngine(factory)
    try {
      const from = local.length === 0 ? { tag: 'empty' } : { tag: 'migrations', ...(await migrationList(local)) }
      const out = await engine.diff({
        from,
        to: { tag: 'schemaDatamodel', files: [{ path: 'schema.prisma', content: schema }] },
        script: true,
        exitCode: null,
        filters: noFilters,
      })
      return /^\s*(-- This is an empty migration\.)?\s*$/.test(out.stdout) ? '' : out.stdout
    } finally {
      engine.free()
    }
  })
}
