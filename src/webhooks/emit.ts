import { randomUUID } from 'node:crypto'
import { systemClock, type Clock } from '../clock.js'
import type { PrismaClient } from '../generated/prisma/client.js'
import { eventDataSchemas, type WebhookEventInput } from './events.js'
import { DEFAULT_RETRY } from './retry.js'
import { WEBHOOK_CHANNEL } from './wakeups.js'

// The outbox side. emitEvents() runs inside the transaction that changes the data (an import, a
// chain-source update), so an event exists exactly when its change committed: a rollback takes
// the events and their deliveries with it, and the NOTIFY that wakes the workers is only sent on
// commit. Rows are written set-based (one statement per chunk, events as one json parameter; json, not jsonb, so each
// payload keeps its documented key order byte for byte).

/** The Prisma client or an interactive transaction's client (`prisma.$transaction(async (tx) => …)`). */
export type SqlClient = Pick<PrismaClient, '$queryRawUnsafe' | '$executeRawUnsafe'>

export interface EmitOptions {
  clock?: Clock
  /** How long the new deliveries are retried (24 h). */
  retryWindowMs?: number
}

export interface EmitResult {
  /** Events written to the outbox (those at least one endpoint subscribes to). */
  events: number
  /** Delivery rows created (event × matching endpoint). */
  deliveries: number
}

const CHUNK = 2000

// The filters of the live endpoints, read first so that events nobody subscribes to (most of a
// bulk import, or everything while no endpoint is registered) never travel to the database.
const FILTERS_SQL = `SELECT event_types, vault_ids FROM webhook_endpoints WHERE disabled_at IS NULL`

// The same match again in SQL, against the endpoints this statement sees: an endpoint created
// concurrently is matched or not as a whole, never half.
const EMIT_SQL = `
WITH input AS (
  SELECT x.id, x.type, x.vault_id, x.data
  FROM json_to_recordset($1::json) AS x(id uuid, type text, vault_id text, data json)
), matched AS MATERIALIZED (
  SELECT i.id AS event_id, e.id AS endpoint_id
  FROM input i
  JOIN webhook_endpoints e
    ON e.disabled_at IS NULL
   AND i.type = ANY (e.event_types)
   AND (e.vault_ids IS NULL OR i.vault_id = ANY (e.vault_ids))
), events AS (
  INSERT INTO webhook_events (id, type, vault_id, payload, created_at)
  SELECT i.id, i.type, i.vault_id, i.data, $2::timestamptz
  FROM input i
  WHERE i.id IN (SELECT event_id FROM matched)
  RETURNING id
), deliveries AS (
  INSERT INTO webhook_deliveries (event_id, endpoint_id, status, next_attempt_at, retry_until, created_at, updated_at)
  SELECT m.event_id, m.endpoint_id, 'pending', $2::timestamptz, $3::timestamptz, $2::timestamptz, $2::timestamptz
  FROM matched m JOIN events ev ON ev.id = m.event_id
  RETURNING 1
)
SELECT (SELECT count(*) FROM events)::int AS events, (SELECT count(*) FROM deliveries)::int AS deliveries`

interface Filter {
  event_types: string[] | null
  vault_ids: string[] | null
}

/**
 * Validates `events` against the documented shapes and writes the outbox and delivery rows for
 * every live endpoint whose filters match (event type, and vault unless it takes every vault).
 * Throws on an event that does not match its shape (a bug in the emitter), which rolls back the
 * caller's transaction rather than sending a receiver something undocumented.
 */
export async function emitEvents(tx: SqlClient, events: readonly WebhookEventInput[], options: EmitOptions = {}): Promise<EmitResult> {
  if (events.length === 0) return { events: 0, deliveries: 0 }
  const rows = events.map((event, i) => {
    const schema = eventDataSchemas[event.type]
    if (!schema) throw new Error(`emitEvents: events[${i}] has an unknown type ${JSON.stringify(event.type)}`)
    const parsed = schema.safeParse(event.data)
    if (!parsed.success) throw new Error(`emitEvents: events[${i}] (${event.type}) does not match its shape: ${parsed.error.message}`)
    // The parsed data: documented fields only, in the documented order.
    const data = parsed.data as { vault_id: string }
    return { id: randomUUID(), type: event.type, vault_id: data.vault_id, data }
  })
  const filters = await tx.$queryRawUnsafe<Filter[]>(FILTERS_SQL)
  const wanted = rows.filter((r) => filters.some((f) => (f.event_types ?? []).includes(r.type) && (f.vault_ids === null || f.vault_ids.includes(r.vault_id))))
  if (wanted.length === 0) return { events: 0, deliveries: 0 }
  const now = (options.clock ?? systemClock)()
  const until = new Date(now.getTime() + (options.retryWindowMs ?? DEFAULT_RETRY.windowMs))
  const result: EmitResult = { events: 0, deliveries: 0 }
  for (let i = 0; i < wanted.length; i += CHUNK) {
    const [counts] = await tx.$queryRawUnsafe<EmitResult[]>(EMIT_SQL, JSON.stringify(wanted.slice(i, i + CHUNK)), now.toISOString(), until.toISOString())
    result.events += counts!.events
    result.deliveries += counts!.deliveries
  }
  if (result.deliveries > 0) await tx.$executeRawUnsafe(`NOTIFY ${WEBHOOK_CHANNEL}`)
  return result
}
