import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { badRequest } from '../../core/errors.js'
import { deliveriesQuery, replayEventQuery } from '../../openapi/operations.js'
import type { WebhookService } from '../../webhooks/service.js'
import type { AppEnv } from '../env.js'
import { parseJson } from '../json-body.js'

// `/admin/webhooks` (mounted behind the admin token, decisions.md §11): endpoints, their deliveries
// with every attempt, and replays. The service answers in the wire shape; the query parameters are
// read with the very definitions the OpenAPI document shows (src/openapi/operations.ts).

const BODY_LIMIT = 64 * 1024

export function webhookRoutes(service: WebhookService) {
  const app = new Hono<AppEnv>()
  const ok = (data: unknown) => ({ status: 'ok', data, server_time_ms: Date.now() })
  // Answers name endpoints, URLs and (once) a secret: never kept by a cache.
  app.use('*', async (c, next) => {
    await next()
    c.header('Cache-Control', 'no-store')
  })

  app.post(
    '/',
    bodyLimit({
      maxSize: BODY_LIMIT,
      onError: () => {
        throw badRequest(`The request body is larger than ${BODY_LIMIT / 1024} KiB.`)
      },
    }),
    async (c) => {
      const body = parseJson(await c.req.text())
      const { endpoint, secret } = await service.createEndpoint(body)
      return c.json(ok({ ...endpoint, secret }), 201)
    },
  )

  app.get('/', async (c) => c.json(ok({ items: await service.listEndpoints() })))

  app.post('/events/:event_id/replay', async (c) => {
    const endpointId = replayEventQuery.endpoint_id.parse(c.req.query('endpoint_id'), 'endpoint_id')
    return c.json(ok(await service.replayEvent(c.req.param('event_id'), endpointId)))
  })

  app.get('/:id', async (c) => c.json(ok(await service.getEndpoint(c.req.param('id')))))

  app.delete('/:id', async (c) => {
    const id = c.req.param('id')
    await service.deleteEndpoint(id)
    return c.json(ok({ id, deleted: true }))
  })

  app.get('/:id/deliveries', async (c) => {
    const limit = deliveriesQuery.limit.parse(c.req.query('limit'), 'limit')
    const cursor = deliveriesQuery.cursor.parse(c.req.query('cursor'), 'cursor')
    const status = deliveriesQuery.status.parse(c.req.query('status'), 'status')
    return c.json(ok(await service.listDeliveries(c.req.param('id'), { limit, cursor, status })))
  })

  app.post('/:id/deliveries/:delivery_id/replay', async (c) => c.json(ok(await service.replayDelivery(c.req.param('id'), c.req.param('delivery_id')))))
  return app
}
