import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { systemClock, type Clock } from '../../core/clock.js'
import type { Config } from '../../config.js'
import type { Db } from '../../db/client.js'
import type { RateLimits } from '../../core/rate-limit.js'
import { logger } from '../../core/log.js'
import { throttledProgress } from '../../core/progress.js'
import { parseOffThread } from '../../importer/off-thread.js'
import { parseAndValidate, sourceOf } from '../../importer/prepare.js'
import { importSource } from '../../importer/write.js'
import type { WebhookService } from '../../webhooks/service.js'
import { allowlistRoutes } from './allowlist.js'
import { webhookRoutes } from './webhooks.js'
import { requireBearer } from '../middleware/bearer.js'
import { importBytes, importMediaType, tooLarge } from '../import-body.js'
import type { AppEnv } from '../env.js'

export const IMPORT_BODY_LIMIT = 256 * 1024 * 1024

/** Documents from this size on are parsed and validated in a worker thread (a 1 MiB one takes ~10 ms here). */
export const OFF_THREAD_MIN_BYTES = 1024 * 1024

/**
 * Rows per statement of an import through the gateway (docs/performance.md "Imports"). Embedded
 * PGlite runs each statement on the event loop: 100 rows take 10–20 ms. With PostgreSQL the
 * statement runs elsewhere, but Prisma still handles its parameter on the event loop (a 5,000-row
 * chunk is 1.7 MB of JSON): 1,000 rows keep that short.
 */
export const EMBEDDED_CHUNK_ROWS = 100
export const POSTGRES_CHUNK_ROWS = 1000

/** Operator routes behind `Authorization: Bearer $ADMIN_TOKEN`; absent (404) when ADMIN_TOKEN is unset. */
export function adminRoutes(
  config: Pick<Config, 'adminToken' | 'trustProxyHops' | 'ipv6Prefix' | 'storage'>,
  hooks: { db: Db; onDataChanged?: () => void; clock?: Clock; webhooks: WebhookService; limits?: RateLimits },
) {
  const app = new Hono<AppEnv>()
  app.use('*', requireBearer(config.adminToken, 'ADMIN_TOKEN', 'Admin', hooks.limits && { limits: hooks.limits, who: config, bucket: 'admin_token' }))

  app.post(
    '/import',
    // JSON only, as is or gzip (415 otherwise), at most IMPORT_BODY_LIMIT before and after inflating (413).
    importMediaType,
    bodyLimit({
      maxSize: IMPORT_BODY_LIMIT,
      onError: () => {
        throw tooLarge(IMPORT_BODY_LIMIT)
      },
    }),
    async (c) => {
      // Parsed and validated in a worker thread, written in bounded chunks with a turn of the
      // event loop between them: health checks and reads keep being answered (docs/performance.md "Imports").
      const bytes = await importBytes(c, IMPORT_BODY_LIMIT)
      // A small document is parsed here: a worker's start would cost more than the parse.
      const source = bytes.byteLength >= OFF_THREAD_MIN_BYTES ? await parseOffThread(bytes) : sourceOf(parseAndValidate(bytes))
      const requestId = c.get('requestId')
      const { totals, vaults } = source.summary
      logger.info({ requestId, vaults: vaults.length, ...totals }, 'import validated; writing')
      const report = throttledProgress((kind, done, total, rowsPerSecond) => logger.info({ requestId, kind, done, total, rowsPerSecond }, 'import progress'))
      const started = performance.now()
      const counts = await importSource(source, hooks.db, {
        clock: hooks.clock,
        onProgress: (p) => report(p.kind, p.done, p.total),
        maxChunkRows: config.storage.mode === 'embedded' ? EMBEDDED_CHUNK_ROWS : POSTGRES_CHUNK_ROWS,
      })
      const seconds = (performance.now() - started) / 1000
      const rows = counts.compositions + counts.vault_snapshots + counts.transactions
      logger.info({ requestId, ...counts, seconds: Math.round(seconds * 10) / 10, rowsPerSecond: Math.round(rows / seconds) }, 'import written')
      hooks.onDataChanged?.()
      return c.json({ status: 'ok', data: counts, server_time_ms: Date.now() })
    },
  )
  app.route('/allowlist', allowlistRoutes(hooks.db, hooks.clock ?? systemClock))
  app.route('/webhooks', webhookRoutes(hooks.webhooks))
  return app
}
