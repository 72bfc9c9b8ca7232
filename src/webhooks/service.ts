import { randomUUID } from 'node:crypto'
import { systemClock, type Clock } from '../core/clock.js'
import { badRequest, notFound } from '../core/errors.js'
import { parseInput } from '../core/input.js'
import { cursorCodec, isCursorMs, REST_CURSOR } from '../core/signed-cursor.js'
import { WebhookDeliveryStatus } from '../generated/prisma/enums.js'
import type { WebhookEventType } from './events.js'
import { CreateEndpointInput, describeEndpointIssue } from './inputs.js'
import { checkWebhookUrl, OutboundRefused, type OutboundPolicy } from './outbound.js'
import { DEFAULT_RETRY, type RetryPolicy } from './retry.js'
import { generateSecret, type SecretBox } from './secrets.js'
import type { DeliveryPage, WebhookDeliveryView, WebhookEndpointView } from './views.js'
import {
  attemptsOf,
  deleteEndpointRow,
  deliveryPage,
  endpointSecrets,
  findEndpoint,
  insertEndpoint,
  knownVaultIds,
  listEndpointRows,
  notifyWorkers,
  replaceSecret,
  replayDeliveryRow,
  replayEventRows,
  setEndpointDisabled,
  type AttemptRow,
  type DeliveryRow,
  type EndpointRow,
  type TxClient,
} from './store.js'

// What the admin routes and the CLI call (decisions.md §11): endpoints, their deliveries with every
// attempt, and replays. Answers are in the REST wire format (snake_case, RFC 3339 timestamps);
// bad input is a `bad_request` naming the field, an unknown id a `not_found`.

export interface WebhookServiceOptions {
  prisma: TxClient
  secrets: SecretBox
  /** The URL rules (https in production, private addresses); DNS is checked at delivery, not here. */
  policy: Pick<OutboundPolicy, 'requireHttps' | 'allowPrivate'>
  clock?: Clock
  retry?: RetryPolicy
}

export type { DeliveryPage, WebhookAttemptView, WebhookDeliveryView, WebhookEndpointView } from './views.js'

export type DeliveryStatus = WebhookDeliveryStatus
const DELIVERY_STATUSES = Object.values(WebhookDeliveryStatus)

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export interface WebhookService {
  /** Registers an endpoint; the only time its `whsec_…` secret is shown. */
  createEndpoint(input: unknown): Promise<{ endpoint: WebhookEndpointView; secret: string }>
  listEndpoints(): Promise<WebhookEndpointView[]>
  getEndpoint(id: string): Promise<WebhookEndpointView>
  /** Deletes the endpoint with its deliveries and their attempts. */
  deleteEndpoint(id: string): Promise<void>
  /** Switches an endpoint off (no new deliveries, none sent) or back on. */
  setDisabled(id: string, disabled: boolean): Promise<WebhookEndpointView>
  /** Newest first. `limit` 1–200 (default 50); `cursor` from a previous page's `next_cursor`. */
  listDeliveries(endpointId: string, options?: { limit?: number; cursor?: string; status?: string }): Promise<DeliveryPage>
  /**
   * Sends a delivery again: a finished one (succeeded or dead) becomes pending with a fresh 24 h
   * window; a pending one is made due now. One in flight is left alone.
   */
  replayDelivery(endpointId: string, deliveryId: string): Promise<WebhookDeliveryView>
  /**
   * Sends an event again to `endpointId`, or to every live endpoint subscribed to it: each gets a
   * pending delivery due now (its existing delivery is reset, or a new one is made).
   */
  replayEvent(eventId: string, endpointId?: string): Promise<{ deliveries: number }>
  /** Re-seals every stored secret with the current WEBHOOK_SECRET_KEY (after a key rotation). */
  resealSecrets(): Promise<number>
}

const iso = (d: Date) => new Date(d).toISOString()
const isoOrNull = (d: Date | null) => (d === null ? null : iso(d))

function endpointView(r: EndpointRow): WebhookEndpointView {
  return {
    id: r.id,
    url: r.url,
    event_types: r.event_types as WebhookEventType[],
    vault_ids: r.vault_ids,
    created_at: iso(r.created_at),
    disabled_at: isoOrNull(r.disabled_at),
  }
}

function deliveryView(r: DeliveryRow, attempts: AttemptRow[]): WebhookDeliveryView {
  return {
    id: r.id,
    event_id: r.event_id,
    event_type: r.type as WebhookEventType,
    vault_id: r.vault_id,
    status: r.status,
    attempt_count: r.attempts,
    next_attempt_at: r.status === 'pending' ? iso(r.next_attempt_at) : null,
    retry_until: iso(r.retry_until),
    last_status_code: r.last_status_code,
    last_error: r.last_error,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    succeeded_at: isoOrNull(r.succeeded_at),
    dead_at: isoOrNull(r.dead_at),
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      started_at: iso(a.started_at),
      duration_ms: a.duration_ms,
      status_code: a.status_code,
      error: a.error,
      response_body: a.response_body,
    })),
  }
}

// The cursor is an integrity check, as for the other lists (core/signed-cursor.ts): a cursor we
// did not issue is a 400, and so is one issued for another endpoint or status filter, rather than
// a different page.
const cursors = cursorCodec('webhook-deliveries', 1, 'endpoint or status filter')

export function createWebhookService(options: WebhookServiceOptions): WebhookService {
  const { prisma, secrets, policy } = options
  const clock = options.clock ?? systemClock
  const retry = options.retry ?? DEFAULT_RETRY

  const requireUuid = (id: string, what: string) => {
    if (!UUID.test(id)) throw notFound(`No ${what} with id ${JSON.stringify(id.slice(0, 64))}.`)
  }

  async function endpointRow(id: string): Promise<EndpointRow> {
    requireUuid(id, 'webhook endpoint')
    const row = await findEndpoint(prisma, id)
    if (!row) throw notFound(`No webhook endpoint with id ${id}.`)
    return row
  }

  return {
    async createEndpoint(input) {
      const { url, event_types, vault_ids } = parseInput(CreateEndpointInput, input, describeEndpointIssue)
      try {
        checkWebhookUrl(url, policy)
      } catch (e) {
        if (e instanceof OutboundRefused) throw badRequest(`url: ${e.message}`)
        throw e
      }
      const eventTypes = [...new Set(event_types)]
      const vaultIds = vault_ids ? [...new Set(vault_ids)] : null
      if (vaultIds) {
        const known = await knownVaultIds(prisma, vaultIds)
        const missing = vaultIds.filter((v) => !known.has(v))
        if (missing.length > 0)
          throw badRequest(
            `vault_ids: no vault with id ${missing
              .slice(0, 5)
              .map((m) => JSON.stringify(m))
              .join(', ')}.`,
          )
      }
      const id = randomUUID()
      const secret = generateSecret()
      const row = await insertEndpoint(prisma, { id, url, eventTypes, vaultIds, sealedSecret: secrets.seal(secret, id), createdAt: clock() })
      return { endpoint: endpointView(row), secret }
    },

    async listEndpoints() {
      return (await listEndpointRows(prisma)).map(endpointView)
    },

    async getEndpoint(id) {
      return endpointView(await endpointRow(id))
    },

    async deleteEndpoint(id) {
      requireUuid(id, 'webhook endpoint')
      if (!(await deleteEndpointRow(prisma, id))) throw notFound(`No webhook endpoint with id ${id}.`)
    },

    async setDisabled(id, disabled) {
      requireUuid(id, 'webhook endpoint')
      const row = await setEndpointDisabled(prisma, id, disabled, clock())
      if (!row) throw notFound(`No webhook endpoint with id ${id}.`)
      if (!disabled) await notifyWorkers(prisma)
      return endpointView(row)
    },

    async listDeliveries(endpointId, { limit = 50, cursor, status } = {}) {
      if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw badRequest('limit must be an integer from 1 to 200.')
      if (status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(status))
        throw badRequest(`status must be one of ${DELIVERY_STATUSES.join(', ')}.`)
      await endpointRow(endpointId)
      const filter = [endpointId, status ?? null]
      const position =
        cursor === undefined ? null : cursors.decode(filter, cursor, ([ms, id]) => isCursorMs(ms) && typeof id === 'string' && UUID.test(id), REST_CURSOR)
      const after = position ? { createdAt: new Date(position[0] as number), id: position[1] as string } : null
      const rows = await deliveryPage(prisma, endpointId, { status: (status as WebhookDeliveryStatus | undefined) ?? null, after, take: limit + 1 })
      const page = rows.slice(0, limit)
      const attempts = await attemptsOf(
        prisma,
        page.map((r) => r.id),
      )
      const last = page.at(-1)
      return {
        items: page.map((r) => deliveryView(r, attempts.get(r.id) ?? [])),
        next_cursor: rows.length > limit && last ? cursors.encode(filter, [new Date(last.created_at).getTime(), last.id]) : null,
      }
    },

    async replayDelivery(endpointId, deliveryId) {
      requireUuid(endpointId, 'webhook endpoint')
      requireUuid(deliveryId, 'webhook delivery')
      const now = clock()
      const row = await replayDeliveryRow(prisma, endpointId, deliveryId, now, new Date(now.getTime() + retry.windowMs))
      if (!row) throw notFound(`No delivery ${deliveryId} of webhook endpoint ${endpointId}.`)
      return deliveryView(row, (await attemptsOf(prisma, [row.id])).get(row.id) ?? [])
    },

    async replayEvent(eventId, endpointId) {
      requireUuid(eventId, 'webhook event')
      if (endpointId !== undefined) await endpointRow(endpointId)
      const now = clock()
      const result = await replayEventRows(prisma, eventId, endpointId ?? null, now, new Date(now.getTime() + retry.windowMs))
      if (!result) throw notFound(`No webhook event with id ${eventId}.`)
      if (endpointId !== undefined && result.matched === 0) {
        throw badRequest(`Webhook endpoint ${endpointId} is disabled or does not subscribe to this event (${result.type} of its vault).`)
      }
      return { deliveries: result.deliveries }
    },

    async resealSecrets() {
      if (!secrets.sealing) return 0
      let n = 0
      for (const r of await endpointSecrets(prisma)) n += await replaceSecret(prisma, r.id, r.secret, secrets.seal(secrets.open(r.secret, r.id), r.id))
      return n
    },
  }
}
