import { randomUUID } from 'node:crypto'
import { systemClock, type Clock } from '../core/clock.js'
import { eventDataSchemas, type WebhookEventInput } from './events.js'
import { DEFAULT_RETRY } from './retry.js'
import {
  createChangeCapture,
  emitCapturedEvents,
  insertOutbox,
  emitRemovedTransactions,
  liveEndpointFilters,
  nextTransactionGeneration,
  notifyWorkers,
  wantedEventTypes,
  type EmitCounts,
  type OutboxRow,
  type SqlClient,
} from './store.js'

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

// ---------------------------------------------------------------------------------------------
// Events of a bulk write (an import), computed in SQL: the writer records what it changed in the
// capture table (store.ts CHANGES_TABLE) with the same statements that write the rows, and one
// statement turns those rows into events before commit. Nothing per row travels to or from the
// gateway, and with no endpoint subscribed nothing is captured at all.

export { CHANGES_TABLE } from './store.js'

/** What a bulk write has to capture for the live endpoints (null: nothing, no endpoint wants its events). */
export interface ChangeCapture {
  /** Capture new transactions and status changes. */
  transactions: boolean
  /** Capture vaults whose record or composition changed. */
  vaults: boolean
  types: readonly string[]
}

const TRANSACTION_EVENTS = ['transaction.created', 'transaction.status_changed', 'redeem.claimable', 'redeem.completed', 'transaction.removed']

/** Call first in the writing transaction: creates the capture table when some live endpoint wants the events. */
export async function beginChangeCapture(tx: SqlClient): Promise<ChangeCapture | null> {
  const wanted = await wantedEventTypes(tx)
  const capture = { transactions: TRANSACTION_EVENTS.some((t) => wanted.has(t)), vaults: wanted.has('vault.updated'), types: [...wanted] }
  if (!capture.transactions && !capture.vaults) return null
  await createChangeCapture(tx)
  return capture
}

/** Call last in the writing transaction: the captured changes become events and deliveries (and a NOTIFY for the workers). */
export async function emitCapturedChanges(tx: SqlClient, capture: ChangeCapture, options: EmitOptions = {}): Promise<EmitResult> {
  const now = (options.clock ?? systemClock)()
  const until = new Date(now.getTime() + (options.retryWindowMs ?? DEFAULT_RETRY.windowMs))
  const result = await emitCapturedEvents(tx, capture.types, now, until)
  if (result.deliveries > 0) await notifyWorkers(tx)
  return result
}

/**
 * In a chain reorg's rollback (src/sources/store.ts), before the transactions `ids` are deleted:
 * `transaction.removed` for each, as it was recorded.
 */
export async function emitRemovals(tx: SqlClient, capture: ChangeCapture, ids: readonly string[], options: EmitOptions = {}): Promise<EmitResult> {
  if (!capture.types.includes('transaction.removed')) return { events: 0, deliveries: 0 }
  const now = (options.clock ?? systemClock)()
  const until = new Date(now.getTime() + (options.retryWindowMs ?? DEFAULT_RETRY.windowMs))
  const result = await emitRemovedTransactions(tx, ids, now, until)
  if (result.deliveries > 0) await notifyWorkers(tx)
  return result
}

/**
 * Last in a rollback: the transactions it deleted or reopened start a new generation, so their
 * next events (the new chain recording them again) get new ids, while the same change recorded
 * twice without a rollback keeps its id (src/webhooks/store.ts TRANSACTION_EVENT_ID).
 */
export const takenBack = (tx: SqlClient, ids: readonly string[]): Promise<void> => nextTransactionGeneration(tx, ids)
