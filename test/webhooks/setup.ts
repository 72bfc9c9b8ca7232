import type { Database } from '../../src/db/client.js'
import { openDatabase } from '../../src/db/client.js'
import { createChangeFeed, type ChangeFeed } from '../../src/db/listen.js'
import { createLogger } from '../../src/core/log.js'
import { emitEvents, type EmitResult } from '../../src/webhooks/emit.js'
import type { TransactionData, WebhookEventInput } from '../../src/webhooks/events.js'
import type { RetryPolicy } from '../../src/webhooks/retry.js'
import { createSecretBox } from '../../src/webhooks/secrets.js'
import { createWebhookService } from '../../src/webhooks/service.js'
import { createWebhookWorker, type WebhookWorkerOptions } from '../../src/webhooks/worker.js'
import { vaultRow } from '../support/fixtures.js'

export const silent = createLogger('silent')

/** A real key: the suites run with sealed secrets, as production should. */
export const secrets = createSecretBox([Buffer.alloc(32, 7)])

/** Fast but real: milliseconds instead of minutes, the same code path. */
export const fastRetry: RetryPolicy = { baseMs: 20, capMs: 200, windowMs: 60_000, jitter: 0.2 }

export const A = `0x${'a'.repeat(40)}`

export function txEvent(id: string, overrides: Partial<TransactionData> = {}): WebhookEventInput {
  return {
    type: 'transaction.created',
    data: {
      id,
      vault_id: 'v1',
      address: A,
      type: 'deposit',
      status: 'completed',
      amount: '1500.25',
      shares: '1428.809523809523809524',
      timestamp: '2026-11-21T12:00:00.000Z',
      completed_at: '2026-11-21T12:00:00.000Z',
      tx_hash: `0x${'b'.repeat(64)}`,
      ...overrides,
    },
  }
}

export async function insertVaults(db: Database, ...ids: string[]) {
  for (const id of ids) await db.prisma.vault.create({ data: vaultRow(id) as Parameters<typeof db.prisma.vault.create>[0]['data'] })
}

export function emit(db: Pick<Database, 'prisma'>, events: WebhookEventInput[]): Promise<EmitResult> {
  return db.prisma.$transaction((tx) => emitEvents(tx, events))
}

export function serviceFor(db: Pick<Database, 'prisma'>, policy = { requireHttps: false, allowPrivate: true }, extra: { clock?: () => Date } = {}) {
  return createWebhookService({ prisma: db.prisma, secrets, policy, retry: fastRetry, ...extra })
}

export function workerFor(db: Pick<Database, 'prisma'>, options: Partial<WebhookWorkerOptions> = {}) {
  return createWebhookWorker({
    prisma: db.prisma,
    secrets,
    policy: { requireHttps: false, allowPrivate: true },
    retry: fastRetry,
    leaseMs: 15_000,
    idlePollMs: 5,
    log: silent,
    ...options,
  })
}

/** Another client (another "instance") on the same database: its own pool on PostgreSQL. */
export async function secondClient(db: Database): Promise<{ prisma: Database['prisma']; close(): Promise<void> }> {
  const pool = { max: 4, connectTimeoutMs: 5000, idleTimeoutMs: 1000, statementTimeoutMs: 30_000 }
  if (db.pglite) {
    const other = await openDatabase({ storage: { mode: 'embedded', dataDir: 'memory://' }, pool }, { pglite: db.pglite })
    // Not other.close(): that would close the shared PGlite under the first client.
    return { prisma: other.prisma, close: () => other.prisma.$disconnect() }
  }
  const other = await openDatabase({ storage: { mode: 'postgres', url: db.pool!.options.connectionString! }, pool })
  return { prisma: other.prisma, close: () => other.close() }
}

/** A LISTEN connection of its own on the test database (another instance's, say): PGlite's listener, or a PostgreSQL connection. */
export function feedOn(db: Database): ChangeFeed {
  return db.pglite ? createChangeFeed({ pglite: db.pglite }) : createChangeFeed({ connection: { connectionString: db.pool!.options.connectionString } })
}

/** A clock the test moves; starts at the real time so signatures stay within receivers' tolerance. */
export function shiftedClock() {
  let offset = 0
  return {
    clock: () => new Date(Date.now() + offset),
    advance(ms: number) {
      offset += ms
    },
  }
}

export async function clearWebhooks(db: Pick<Database, 'prisma'>) {
  await db.prisma.$executeRawUnsafe('DELETE FROM webhook_endpoints')
  await db.prisma.$executeRawUnsafe('DELETE FROM webhook_events')
}

export interface DeliveryState {
  status: string
  attempts: number
  next_attempt_at: Date
  retry_until: Date
  last_status_code: number | null
  last_error: string | null
}

export async function deliveryOf(db: Pick<Database, 'prisma'>, endpointId: string): Promise<DeliveryState[]> {
  return db.prisma.$queryRawUnsafe<DeliveryState[]>(
    `SELECT status::text AS status, attempts, next_attempt_at, retry_until, last_status_code, last_error
     FROM webhook_deliveries WHERE endpoint_id = $1::uuid ORDER BY created_at, id`,
    endpointId,
  )
}

export async function attemptLog(db: Pick<Database, 'prisma'>, endpointId: string) {
  return db.prisma.$queryRawUnsafe<{ attempt: number; status_code: number | null; error: string | null }[]>(
    `SELECT a.attempt, a.status_code, a.error FROM webhook_delivery_attempts a
     JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1::uuid ORDER BY a.started_at, a.id`,
    endpointId,
  )
}

/** Runs rounds until no delivery is pending or in flight (retries included), or `ms` pass. */
export async function drain(db: Pick<Database, 'prisma'>, worker: { runOnce(): Promise<unknown[]> }, ms = 10_000) {
  const deadline = Date.now() + ms
  for (;;) {
    const [row] = await db.prisma.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status IN ('pending', 'delivering')`,
    )
    if (row!.n === 0) return
    if (Date.now() > deadline) throw new Error(`${row!.n} deliveries still pending after ${ms} ms`)
    if ((await worker.runOnce()).length === 0) await new Promise((r) => setTimeout(r, 5))
  }
}
