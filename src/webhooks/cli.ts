import type { Config } from '../config.js'
import { commaList } from '../core/formats.js'
import { WebhookDeliveryStatus } from '../generated/prisma/enums.js'
import { WEBHOOK_EVENT_TYPES } from './events.js'
import { createSecretBox } from './secrets.js'
import { createWebhookService, type WebhookService } from './service.js'
import type { TxClient } from './store.js'
import type { DeliveryPage, WebhookEndpointView } from './views.js'

// `vaultgate webhooks add|list|remove|deliveries`: what the command line does, apart from how it
// reads its arguments and where it runs. The same actions go to the webhook service (direct
// database access) or to a running gateway's admin API (when it owns the embedded data directory),
// and come back as lines for people.

export const WEBHOOKS_USAGE = 'vaultgate webhooks add|list|remove|deliveries …'
export const WEBHOOKS_SUMMARY = 'Manage webhook endpoints (the signing secret is shown once) and list their deliveries with every attempt.'

/** What the commands need, whichever way they reach the data. */
export interface WebhookOps {
  create(body: { url: string; event_types: string[]; vault_ids?: string[] }): Promise<WebhookEndpointView & { secret: string }>
  list(): Promise<WebhookEndpointView[]>
  remove(id: string): Promise<void>
  deliveries(id: string, options: { status?: string; cursor?: string; limit?: number }): Promise<DeliveryPage>
}

/** The actions on the webhook service over a database client (the CLI's direct access). */
export function serviceOps(service: WebhookService): WebhookOps {
  return {
    create: async (body) => {
      const { endpoint, secret } = await service.createEndpoint(body)
      return { ...endpoint, secret }
    },
    list: () => service.listEndpoints(),
    remove: (id) => service.deleteEndpoint(id),
    deliveries: (id, options) => service.listDeliveries(id, options),
  }
}

/** The webhook service as the gateway configures it (sealing keys, outbound rules). */
export function webhookServiceFor(config: Pick<Config, 'webhooks'>, prisma: TxClient): WebhookService {
  const { secretKeys, requireHttps, allowPrivate } = config.webhooks
  return createWebhookService({ prisma, secrets: createSecretBox(secretKeys), policy: { requireHttps, allowPrivate } })
}

/** The actions through a running gateway's admin API; `call(method, path under /admin, body)` answers the envelope's `data`. */
export function adminApiOps(call: (method: string, path: string, body?: string) => Promise<unknown>): WebhookOps {
  const seg = encodeURIComponent
  return {
    create: async (body) => (await call('POST', '/webhooks', JSON.stringify(body))) as WebhookEndpointView & { secret: string },
    list: async () => ((await call('GET', '/webhooks')) as { items: WebhookEndpointView[] }).items,
    remove: async (id) => {
      await call('DELETE', `/webhooks/${seg(id)}`)
    },
    deliveries: async (id, { status, cursor, limit }) => {
      const query = new URLSearchParams()
      if (limit !== undefined) query.set('limit', String(limit))
      if (status !== undefined) query.set('status', status)
      if (cursor !== undefined) query.set('cursor', cursor)
      const qs = query.size > 0 ? `?${query}` : ''
      return (await call('GET', `/webhooks/${seg(id)}/deliveries${qs}`)) as DeliveryPage
    },
  }
}

export type WebhooksCommand =
  | { action: 'add'; url: string; eventTypes: string[]; vaultIds?: string[] }
  | { action: 'list' }
  | { action: 'remove'; id: string }
  | { action: 'deliveries'; id: string; status?: string; cursor?: string; limit?: number }

/** The TYPES argument: comma-separated event types, or `all`. Throws a sentence for people on an unknown one. */
export function parseEventTypes(text: string): string[] {
  if (text === 'all') return [...WEBHOOK_EVENT_TYPES]
  const types = commaList(text)
  const unknown = types.filter((t) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(t))
  if (types.length === 0 || unknown.length > 0) {
    throw new Error(
      `${unknown.length > 0 ? `Unknown event type ${unknown.join(', ')}` : 'No event type'}; the types are ${WEBHOOK_EVENT_TYPES.join(', ')} (or all).`,
    )
  }
  return types
}

/** The delivery states `--status` takes. */
export const DELIVERY_STATUSES: readonly string[] = Object.values(WebhookDeliveryStatus)

const vaultsOf = (e: WebhookEndpointView) => (e.vault_ids === null ? 'all vaults' : `vaults ${e.vault_ids.join(', ')}`)

/** Runs one command; returns the lines to print. */
export async function runWebhooksCommand(command: WebhooksCommand, ops: WebhookOps): Promise<string[]> {
  switch (command.action) {
    case 'add': {
      const e = await ops.create({ url: command.url, event_types: command.eventTypes, ...(command.vaultIds ? { vault_ids: command.vaultIds } : {}) })
      return [
        `Added webhook endpoint ${e.id} for ${e.url}`,
        `  events ${e.event_types.join(', ')}; ${vaultsOf(e)}`,
        `  signing secret (shown only now; give it to the receiver): ${e.secret}`,
      ]
    }
    case 'list': {
      const items = await ops.list()
      if (items.length === 0) return ['No webhook endpoints.']
      return items.map((e) => `${e.id}  ${e.url}  ${e.event_types.join(',')}  ${vaultsOf(e)}${e.disabled_at ? `  disabled since ${e.disabled_at}` : ''}`)
    }
    case 'remove':
      await ops.remove(command.id)
      return [`Removed webhook endpoint ${command.id} with its deliveries.`]
    case 'deliveries': {
      const page = await ops.deliveries(command.id, { status: command.status, cursor: command.cursor, limit: command.limit })
      if (page.items.length === 0) return [command.cursor ? 'No more deliveries.' : 'No deliveries.']
      const lines: string[] = []
      for (const d of page.items) {
        const last = d.last_status_code !== null ? `HTTP ${d.last_status_code}` : (d.last_error ?? '-')
        const next = d.next_attempt_at ? `  next ${d.next_attempt_at}` : ''
        lines.push(`${d.created_at}  ${d.event_type}  ${d.vault_id}  ${d.status}  ${d.attempt_count} attempt(s), last ${last}${next}  event ${d.event_id}`)
        for (const a of d.attempts) {
          lines.push(`    #${a.attempt} ${a.started_at} ${a.duration_ms} ms  ${a.status_code ?? '-'}${a.error ? `  ${a.error}` : ''}`)
        }
      }
      if (page.next_cursor) {
        lines.push(`More: vaultgate webhooks deliveries ${command.id}${command.status ? ` --status ${command.status}` : ''} --cursor ${page.next_cursor}`)
      }
      return lines
    }
  }
}
