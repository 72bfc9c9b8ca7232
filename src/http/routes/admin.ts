import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { systemClock, type Clock } from '../../core/clock.js'
import type { Config } from '../../config.js'
import type { RateLimits } from '../../core/rate-limit.js'
import { badRequest } from '../../core/errors.js'
import { importDocument } from '../../importer/write.js'
import type { WebhookService } from '../../webhooks/service.js'
import { allowlistRoutes } from './allowlist.js'
import { webhookRoutes } from './webhooks.js'
import { requireBearer } from '../middleware/bearer.js'
import type { AppEnv } from '../env.js'

export const IMPORT_BODY_LIMIT = 256 * 1024 * 1024

/** Operator routes behind `Authorization: Bearer $ADMIN_TOKEN`; absent (404) when ADMIN_TOKEN is unset. */
export function adminRoutes(
  config: Pick<Config, 'adminToken' | 'trustProxyHops'>,
  hooks: { onDataChanged?: () => void; clock?: Clock; webhooks: WebhookService; limits?: RateLimits },
) {
  const app = new Hono<AppEnv>()
  app.use('*', requireBearer(config.adminToken, 'ADMIN_TOKEN', 'Admin', hooks.limits && { limits: hooks.limits, trustProxyHops: config.trustProxyHops }))

  app.post(
    '/import',
    bodyLimit({
      maxSize: IMPORT_BODY_LIMIT,
      onError: () => {
        throw badRequest(`The import document is larger than ${IMPORT_BODY_LIMIT / 1024 / 1024} MiB.`)
      },
    }),
    async (c) => {
      let doc: unknown
      try {
        doc = await c.req.json()
      } catch {
        throw badRequest('The import document is not valid JSON.')
      }
      const counts = await importDocument(doc, undefined, { clock: hooks.clock })
      hooks.onDataChanged?.()
      return c.json({ status: 'ok', data: counts, server_time_ms: Date.now() })
    },
  )
  app.route('/allowlist', allowlistRoutes(hooks.clock ?? systemClock))
  app.route('/webhooks', webhookRoutes(hooks.webhooks))
  return app
}
