import { randomUUID } from 'node:crypto'
import { systemClock, type Clock } from '../core/clock.js'
import { eventDataSchemas, type WebhookEventInput } from './events.js'
import { DEFAULT_RETRY } from './retry.js'
import { insertOutbox, liveEndpointFilters, notifyWorkers, type EmitCounts, type OutboxRow, type SqlClient } from './store.js'

export type { SqlClient } from './store.js'

// The outbox side. emitEvents() runs inside the transaction that changes the data (an import, a
// chain-source update), so an event exists exactly when its change committed: a rollback takes
// the events and their deliveries with it, and the NOTIFY that wakes the workers is only sent on
// commit. Rows are written set-based (one statement per chunk, src/webhooks/store.ts). The live
// endpoints' filters are read first, so that events nobody subscribes to (everything while no
// endpoint is registered) never travel to the database.

export interface EmitOptions {
  clock?: Clock
  /** How long the new deliveries are retried (24 h). */
  retryWindowMs?: number
}

export type EmitResult = EmitCounts

const CHUNK = 2000

/**
 * Validates `events` against the documented shapes and writes the outbox and delivery rows for
 * every live endpoint whose filters match (event type, and vault unless it takes every vault).
 * Throws on an event that does not match its shape (a bug in the emitter), which rolls back the
 * caller's transaction rather than sending a receiver something undocumented.
 */
export async function emitEvents(tx: SqlClient, events: readonly WebhookEventInput[], options: EmitOptions = {}): Promise<EmitResult> {
  if (events.length === 0) return { events: 0, deliveries: 0 }
  const rows = events.map((event, i): OutboxRow => {
    const schema = eventDataSchemas[event.type]
    if (!schema) throw new Error(`emitEvents: events[${i}] has an unknown type ${JSON.stringify(event.type)}`)
    const parsed = schema.safeParse(event.data)
    if (!parsed.success) throw new Error(`emitEvents: events[${i}] (${event.type}) does not match its shape: ${parsed.error.message}`)
    // The parsed data: documented fields only, in the documented order.
    const data = parsed.data as { vault_id: string }
    return { id: randomUUID(), type: event.type, vault_id: data.vault_id, data }
  })
  const filters = await liveEndpointFilters(tx)
  const wanted = rows.filter((r) => filters.some((f) => (f.event_types ?? []).includes(r.type) && (f.vault_ids === null || f.vault_ids.includes(r.vault_id))))
  if (wanted.length === 0) return { events: 0, deliveries: 0 }
  const now = (options.clock ?? systemClock)()
  const until = new Date(now.getTime() + (options.retryWindowMs ?? DEFAULT_RETRY.windowMs))
  const result: EmitResult = { events: 0, deliveries: 0 }
  for (let i = 0; i < wanted.length; i += CHUNK) {
    const counts = await insertOutbox(tx, wanted.slice(i, i + CHUNK), now, until)
    result.events += counts.events
    result.deliveries += counts.deliveries
  }
  if (result.deliveries > 0) await notifyWorkers(tx)
  return result
}
