import type { PrismaClient } from '../generated/prisma/client.js'
import type { WebhookDeliveryStatus } from '../generated/prisma/enums.js'
import type { WebhookEventType } from './events.js'

// Every statement about webhooks: the outbox (emit.ts), the delivery worker's claim and record
// (worker.ts), the admin service (service.ts) and the import's set-based emission (importer/write.ts).
// The client is passed in, the gateway's or a transaction's, so the outbox rows are written by the
// very transaction that changes the data.

/** The Prisma client or an interactive transaction's client (`prisma.$transaction(async (tx) => …)`). */
export type SqlClient = Pick<PrismaClient, '$queryRawUnsafe' | '$executeRawUnsafe'>
/** A client that can also open transactions (the claim and the replays run in their own). */
export type TxClient = SqlClient & Pick<PrismaClient, '$transaction'>

/** The channel that wakes the delivery workers; NOTIFYed in the transaction that creates due work. */
export const WEBHOOK_CHANNEL = 'vaultgate_webhooks'

/** Queues the wake-up: PostgreSQL delivers it to every listening instance at commit, never on rollback. */
export async function notifyWorkers(tx: SqlClient): Promise<void> {
  await tx.$executeRawUnsafe(`NOTIFY ${WEBHOOK_CHANNEL}`)
}

// ---------------------------------------------------------------------------------------------
// The outbox

export interface EndpointFilter {
  event_types: string[] | null
  vault_ids: string[] | null
}

/** The filters of the live endpoints. */
export const liveEndpointFilters = (tx: SqlClient): Promise<EndpointFilter[]> =>
  tx.$queryRawUnsafe<EndpointFilter[]>(`SELECT event_types, vault_ids FROM webhook_endpoints WHERE disabled_at IS NULL`)

/** One outbox row as emitEvents() hands it over. */
export interface OutboxRow {
  id: string
  type: WebhookEventType
  vault_id: string
  data: unknown
}

export interface EmitCounts {
  /** Events written to the outbox (those at least one endpoint subscribes to). */
  events: number
  /** Delivery rows created (event × matching endpoint). */
  deliveries: number
}

// The endpoint match in SQL, against the endpoints this statement sees (its two scans of the small
// endpoint table share one snapshot): an endpoint created concurrently is matched or not as a
// whole, and an event is written exactly when it gets at least one delivery. Each event meets the
// endpoints only: no join of the event set with itself, so the cost grows linearly with the events.
const matches = (alias: string) => `e.disabled_at IS NULL
     AND ${alias}.type = ANY (e.event_types)
     AND (e.vault_ids IS NULL OR ${alias}.vault_id = ANY (e.vault_ids))`

// Shared by emitEvents() and the import's emission: `input` (id, type, vault_id, data) → events
// that some endpoint wants, and their deliveries. Payloads are json, not jsonb, so each keeps its
// documented key order byte for byte.
const OUTBOX_INSERT_SQL = (input: string, now: string, until: string, alongside = '') => `
WITH input AS (${input}), ${alongside} events AS (
  INSERT INTO webhook_events (id, type, vault_id, payload, created_at)
  SELECT i.id, i.type, i.vault_id, i.data, ${now}
  FROM input i
  WHERE EXISTS (SELECT 1 FROM webhook_endpoints e WHERE ${matches('i')})
  -- An event id already written is the same change written again (TRANSACTION_EVENT_ID): not sent twice.
  ON CONFLICT (id) DO NOTHING
  RETURNING id, type, vault_id
), deliveries AS (
  INSERT INTO webhook_deliveries (event_id, endpoint_id, status, next_attempt_at, retry_until, created_at, updated_at)
  SELECT ev.id, e.id, 'pending', ${now}, ${until}, ${now}, ${now}
  FROM events ev JOIN webhook_endpoints e ON ${matches('ev')}
  RETURNING 1
)
SELECT (SELECT count(*) FROM events)::int AS events, (SELECT count(*) FROM deliveries)::int AS deliveries`

const EMIT_SQL = OUTBOX_INSERT_SQL(
  `SELECT x.id, x.type, x.vault_id, x.data FROM json_to_recordset($1::json) AS x(id uuid, type text, vault_id text, data json)`,
  '$2::timestamptz',
  '$3::timestamptz',
)

/** Writes `rows` (already validated) and a delivery per matching live endpoint. */
export async function insertOutbox(tx: SqlClient, rows: readonly OutboxRow[], now: Date, retryUntil: Date): Promise<EmitCounts> {
  const [counts] = await tx.$queryRawUnsafe<EmitCounts[]>(EMIT_SQL, JSON.stringify(rows), now.toISOString(), retryUntil.toISOString())
  return counts!
}

// ---------------------------------------------------------------------------------------------
// What an import changed, captured while it writes (importer/write.ts) and turned into events by
// one statement before it commits. A temporary table dropped at commit: it lives in the import's
// own transaction and session, so concurrent imports never see each other's rows.

/** The capture table; the importer's statements insert into it (see CHANGE_KINDS). */
export const CHANGES_TABLE = 'pg_temp.vaultgate_import_changes'

/**
 * `kind`: `transaction` (id = the transaction id; `previous_status` NULL when it is new, else the
 * status it had before: a row is only captured when it is new or its status changed),
 * `vault_values` (id = a vault whose record is new or differs), `vault_composition` (id = a vault
 * with a new composition snapshot or an existing snapshot's allocations changed).
 */
export const CHANGE_KINDS = ['transaction', 'vault_values', 'vault_composition'] as const

/** The event types some live endpoint subscribes to. */
export async function wantedEventTypes(tx: SqlClient): Promise<Set<string>> {
  const rows = await tx.$queryRawUnsafe<{ type: string }[]>(`SELECT DISTINCT unnest(event_types) AS type FROM webhook_endpoints WHERE disabled_at IS NULL`)
  return new Set(rows.map((r) => r.type))
}

export async function createChangeCapture(tx: SqlClient): Promise<void> {
  await tx.$executeRawUnsafe(
    `CREATE TEMPORARY TABLE IF NOT EXISTS ${CHANGES_TABLE.slice('pg_temp.'.length)} (
       kind text NOT NULL, id text NOT NULL, previous_status text, PRIMARY KEY (kind, id)
     ) ON COMMIT DROP`,
  )
}

// Amounts as decisions §3 wants them (trim_scale: no trailing fractional zeros; NUMERIC has no
// -0), timestamps RFC 3339 UTC with milliseconds, addresses lowercase; json_build_object keeps
// the documented key order. test/webhooks/import-events.test.ts parses every payload with the
// zod schemas of events.ts, as emitEvents() does for events built in code.
const ts = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
const TRANSACTION_JSON = `
  'id', t.id, 'vault_id', t.vault_id, 'address', lower(t.address), 'type', t.type, 'status', t.status,
  'amount', trim_scale(t.amount)::text, 'shares', trim_scale(t.shares)::text, 'timestamp', ${ts('t.timestamp')},
  'completed_at', ${ts('t.completed_at')}, 'tx_hash', t.tx_hash`

/**
 * The id of a transaction's event (its `webhook-id`), derived from what the event says rather than
 * drawn at random: the event type, the transaction id, the status change (for
 * `transaction.status_changed`) and the transaction's generation (`g`: how many times its status
 * changed or a chain reorg took it back, src/sources/store.ts rollBack). The same change recorded
 * twice (a range read again) carries the same id, so a receiver de-duplicates it and the outbox
 * does not write it twice; after a reorg took the transaction back, its return is a new event.
 */
const TRANSACTION_EVENT_ID = (type: string, previousStatus = 'NULL') =>
  `md5(concat_ws(':', 'vaultgate-event', '${type}', t.id, coalesce(g.generation, 0)::text, ${previousStatus}::text,
     CASE WHEN ${previousStatus} IS NULL THEN NULL ELSE t.status::text END))::uuid`
const GENERATION_JOIN = `LEFT JOIN transaction_event_generations g ON g.transaction_id = t.id`

const IMPORT_EVENTS_SQL = OUTBOX_INSERT_SQL(
  `
  SELECT ${TRANSACTION_EVENT_ID('transaction.created')} AS id, 'transaction.created' AS type, t.vault_id, json_build_object(${TRANSACTION_JSON}) AS data
  FROM ${CHANGES_TABLE} c JOIN transactions t ON t.id = c.id ${GENERATION_JOIN}
  WHERE c.kind = 'transaction' AND c.previous_status IS NULL AND 'transaction.created' = ANY ($3::text[])
  UNION ALL
  SELECT ${TRANSACTION_EVENT_ID('transaction.status_changed', 'c.previous_status')}, 'transaction.status_changed', t.vault_id,
    json_build_object(${TRANSACTION_JSON}, 'previous_status', c.previous_status)
  FROM ${CHANGES_TABLE} c JOIN transactions t ON t.id = c.id ${GENERATION_JOIN}
  WHERE c.kind = 'transaction' AND c.previous_status IS NOT NULL AND 'transaction.status_changed' = ANY ($3::text[])
  UNION ALL
  SELECT ${TRANSACTION_EVENT_ID('redeem.claimable')}, 'redeem.claimable', t.vault_id, json_build_object(${TRANSACTION_JSON})
  FROM ${CHANGES_TABLE} c JOIN transactions t ON t.id = c.id ${GENERATION_JOIN}
  WHERE c.kind = 'transaction' AND t.type = 'redeem' AND t.status = 'claimable'
    AND 'redeem.claimable' = ANY ($3::text[])
  UNION ALL
  SELECT ${TRANSACTION_EVENT_ID('redeem.completed')}, 'redeem.completed', t.vault_id, json_build_object(${TRANSACTION_JSON})
  FROM ${CHANGES_TABLE} c JOIN transactions t ON t.id = c.id ${GENERATION_JOIN}
  WHERE c.kind = 'transaction' AND t.type = 'redeem' AND t.status = 'completed'
    AND 'redeem.completed' = ANY ($3::text[])
  UNION ALL
  SELECT gen_random_uuid(), 'vault.updated', v.id, json_build_object(
    'vault_id', v.id, 'status', v.status, 'tvl', trim_scale(v.tvl)::text, 'share_price', trim_scale(v.share_price)::text,
    'changes', array_to_json(array_remove(ARRAY[
      CASE WHEN bool_or(c.kind = 'vault_values') THEN 'values' END,
      CASE WHEN bool_or(c.kind = 'vault_composition') THEN 'composition' END], NULL)))
  FROM ${CHANGES_TABLE} c JOIN vaults v ON v.id = c.id
  WHERE c.kind IN ('vault_values', 'vault_composition') AND 'vault.updated' = ANY ($3::text[])
  GROUP BY v.id`,
  '$1::timestamptz',
  '$2::timestamptz',
  // A status that changes back and forth (completed, pending again, completed) makes the same
  // transition twice: each status change starts a new generation, so the next one is a new event.
  // In the same statement, so the ids above are computed with the generation before it.
  `generations AS (
    INSERT INTO transaction_event_generations (transaction_id, generation)
    SELECT c.id, 1 FROM ${CHANGES_TABLE} c WHERE c.kind = 'transaction' AND c.previous_status IS NOT NULL
    ON CONFLICT (transaction_id) DO UPDATE SET generation = transaction_event_generations.generation + 1
  ),`,
)

const REMOVED_EVENTS_SQL = OUTBOX_INSERT_SQL(
  `
  SELECT ${TRANSACTION_EVENT_ID('transaction.removed')} AS id, 'transaction.removed' AS type, t.vault_id, json_build_object(${TRANSACTION_JSON}) AS data
  FROM transactions t ${GENERATION_JOIN}
  WHERE t.id = ANY ($3::text[])`,
  '$1::timestamptz',
  '$2::timestamptz',
)

/**
 * `transaction.removed` for the transactions `ids`, as they are now: call before deleting them
 * (a chain reorg's rollback, src/sources/store.ts).
 */
export async function emitRemovedTransactions(tx: SqlClient, ids: readonly string[], now: Date, retryUntil: Date): Promise<EmitCounts> {
  if (ids.length === 0) return { events: 0, deliveries: 0 }
  const [counts] = await tx.$queryRawUnsafe<EmitCounts[]>(REMOVED_EVENTS_SQL, now.toISOString(), retryUntil.toISOString(), ids)
  return counts!
}

/** A reorg took these transactions back: their next events are new ones (TRANSACTION_EVENT_ID). Call after their events are written. */
export async function nextTransactionGeneration(tx: SqlClient, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return
  await tx.$executeRawUnsafe(
    `INSERT INTO transaction_event_generations (transaction_id, generation)
     SELECT DISTINCT id, 1 FROM unnest($1::text[]) AS id
     ON CONFLICT (transaction_id) DO UPDATE SET generation = transaction_event_generations.generation + 1`,
    ids,
  )
}

/** Turns the captured changes into outbox rows for the wanted `types`, in one statement. */
export async function emitCapturedEvents(tx: SqlClient, types: readonly string[], now: Date, retryUntil: Date): Promise<EmitCounts> {
  const [counts] = await tx.$queryRawUnsafe<EmitCounts[]>(IMPORT_EVENTS_SQL, now.toISOString(), retryUntil.toISOString(), types)
  return counts!
}

// ---------------------------------------------------------------------------------------------
// The delivery worker

export interface ClaimRow {
  delivery_id: string
  endpoint_id: string
  event_id: string
  attempts: number
  retry_from_attempt: number
  retry_until: Date
  lease_token: string
  /** The endpoint's failed attempts in a row before this one. */
  failure_streak: number
  url: string
  secret: string
  type: WebhookEventType
  payload: Record<string, unknown>
  created_at: Date
}

const LEASE_SQL = `
UPDATE webhook_endpoints AS e
SET lease_token = gen_random_uuid(), lease_expires_at = $2::timestamptz
WHERE e.id IN (
  SELECT c.id
  FROM webhook_endpoints c
  CROSS JOIN LATERAL (
    SELECT d.next_attempt_at FROM webhook_deliveries d
    WHERE d.endpoint_id = c.id AND d.status IN ('pending', 'delivering')
    ORDER BY d.next_attempt_at
    LIMIT 1
  ) due
  WHERE c.disabled_at IS NULL
    AND (c.lease_expires_at IS NULL OR c.lease_expires_at <= $1::timestamptz)
    AND (c.backoff_until IS NULL OR c.backoff_until <= $1::timestamptz)
    AND due.next_attempt_at <= $1::timestamptz
  ORDER BY GREATEST(due.next_attempt_at, c.backoff_until)
  LIMIT $3::int
  FOR UPDATE OF c SKIP LOCKED
)
RETURNING e.id::text AS id, e.lease_token::text AS token`

// Runs in the claim transaction after LEASE_SQL, so its snapshot already sees whatever the
// endpoints' previous holders committed before we got their rows.
const PICK_SQL = `
WITH leased AS (
  SELECT x.id, x.token FROM json_to_recordset($1::json) AS x(id uuid, token uuid)
), pick AS (
  SELECT DISTINCT ON (d.endpoint_id) d.id, d.status AS previous_status, d.attempts AS previous_attempts,
         d.updated_at AS previous_claimed_at, l.token
  FROM leased l
  JOIN webhook_deliveries d ON d.endpoint_id = l.id
  WHERE d.status IN ('pending', 'delivering') AND d.next_attempt_at <= $2::timestamptz
  ORDER BY d.endpoint_id, d.next_attempt_at, d.created_at, d.id
), abandoned AS (
  INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, error)
  SELECT p.id, p.previous_attempts, p.previous_claimed_at,
         GREATEST(0, floor(extract(epoch FROM ($2::timestamptz - p.previous_claimed_at)) * 1000))::int, $4::text
  FROM pick p
  WHERE p.previous_status = 'delivering'
), claimed AS (
  UPDATE webhook_deliveries d
  SET status = 'delivering', attempts = d.attempts + 1, lease_token = p.token,
      next_attempt_at = $3::timestamptz, updated_at = $2::timestamptz
  FROM pick p
  WHERE d.id = p.id
  RETURNING d.id, d.endpoint_id, d.event_id, d.attempts, d.retry_from_attempt, d.retry_until, d.lease_token
)
SELECT c.id::text AS delivery_id, c.endpoint_id::text AS endpoint_id, c.event_id::text AS event_id, c.attempts,
       c.retry_from_attempt, c.retry_until, c.lease_token::text AS lease_token, e.failure_streak, e.url, e.secret,
       ev.type, ev.payload, ev.created_at
FROM claimed c
JOIN webhook_endpoints e ON e.id = c.endpoint_id
JOIN webhook_events ev ON ev.id = c.event_id`

const RELEASE_SQL = `
UPDATE webhook_endpoints SET lease_token = NULL, lease_expires_at = NULL
WHERE lease_token IN (SELECT value::uuid FROM json_array_elements_text($1::json))`

/**
 * Leases up to `limit` endpoints with due work and marks the earliest due delivery of each
 * `delivering` (logging a lost attempt as `abandonedNote` when it was already), in one short
 * transaction. READ COMMITTED whatever the server's default: the lease relies on its re-check of
 * a row updated since the statement began (REPEATABLE READ would fail the claim instead).
 */
export function claimDeliveries(
  prisma: TxClient,
  { now, leaseUntil, limit, abandonedNote }: { now: Date; leaseUntil: Date; limit: number; abandonedNote: string },
): Promise<ClaimRow[]> {
  return prisma.$transaction(
    async (tx) => {
      const leased = await tx.$queryRawUnsafe<{ id: string; token: string }[]>(LEASE_SQL, now.toISOString(), leaseUntil.toISOString(), limit)
      if (leased.length === 0) return []
      const picked = await tx.$queryRawUnsafe<ClaimRow[]>(PICK_SQL, JSON.stringify(leased), now.toISOString(), leaseUntil.toISOString(), abandonedNote)
      // An endpoint whose due delivery was finished by its previous holder between our two
      // statements: give the lease back at once rather than idle it until it expires.
      const used = new Set(picked.map((p) => p.lease_token))
      const unused = leased.filter((l) => !used.has(l.token)).map((l) => l.token)
      if (unused.length > 0) await tx.$executeRawUnsafe(RELEASE_SQL, JSON.stringify(unused))
      return picked
    },
    // maxWait: embedded, a long import holds PGlite's one connection; the claim waits its turn.
    { isolationLevel: 'ReadCommitted', maxWait: 30_000 },
  )
}

const RECORD_SQL = `
WITH d AS (
  UPDATE webhook_deliveries
  SET status = $3::text::"WebhookDeliveryStatus",
      next_attempt_at = COALESCE($4::timestamptz, next_attempt_at),
      lease_token = NULL,
      last_status_code = $5::int,
      last_error = $6::text,
      updated_at = $7::timestamptz,
      succeeded_at = CASE WHEN $3::text = 'succeeded' THEN $7::timestamptz ELSE succeeded_at END,
      dead_at = CASE WHEN $3::text = 'dead' THEN $7::timestamptz END
  WHERE id = $1::uuid AND lease_token = $2::uuid AND status = 'delivering'
  RETURNING id, attempts
), log AS (
  INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, response_body)
  SELECT d.id, d.attempts, $8::timestamptz, $9::int, $5::int, $6::text, $10::text FROM d
), release AS (
  UPDATE webhook_endpoints
  SET lease_token = NULL, lease_expires_at = NULL,
      failure_streak = CASE WHEN $3::text = 'succeeded' THEN 0 ELSE failure_streak + 1 END,
      backoff_until = $12::timestamptz
  WHERE id = $11::uuid AND lease_token = $2::uuid
)
SELECT count(*)::int AS recorded FROM d`

export interface AttemptRecord {
  deliveryId: string
  endpointId: string
  leaseToken: string
  status: 'succeeded' | 'pending' | 'dead'
  nextAttemptAt: Date | null
  /** The endpoint's lane stays closed until then (null after a success). */
  endpointBackoffUntil: Date | null
  statusCode: number | null
  error: string | null
  responseBody: string | null
  startedAt: Date
  finishedAt: Date
  durationMs: number
}

/**
 * Records an attempt's outcome and frees the endpoint, in one statement that only counts while
 * the lease token is still the worker's. False when it was not (the lease ran out and another
 * instance owns the delivery now, or the endpoint was deleted).
 */
export async function recordAttempt(prisma: SqlClient, r: AttemptRecord): Promise<boolean> {
  const [row] = await prisma.$queryRawUnsafe<{ recorded: number }[]>(
    RECORD_SQL,
    r.deliveryId,
    r.leaseToken,
    r.status,
    r.nextAttemptAt?.toISOString() ?? null,
    r.statusCode,
    r.error,
    r.finishedAt.toISOString(),
    r.startedAt.toISOString(),
    r.durationMs,
    r.responseBody,
    r.endpointId,
    r.endpointBackoffUntil?.toISOString() ?? null,
  )
  return (row?.recorded ?? 0) > 0
}

/** Deletes (up to 5000) events older than `before` whose deliveries are all finished. */
export const pruneEvents = (prisma: SqlClient, before: Date): Promise<number> =>
  prisma.$executeRawUnsafe(
    `DELETE FROM webhook_events
     WHERE id IN (
       SELECT ev.id FROM webhook_events ev
       WHERE ev.created_at < $1::timestamptz
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = ev.id AND d.status IN ('pending', 'delivering'))
       LIMIT 5000
     )`,
    before.toISOString(),
  )

// ---------------------------------------------------------------------------------------------
// Endpoints (the admin service)

export interface EndpointRow {
  id: string
  url: string
  event_types: string[]
  vault_ids: string[] | null
  created_at: Date
  disabled_at: Date | null
}

const ENDPOINT_COLUMNS = `id::text AS id, url, event_types, vault_ids, created_at, disabled_at`

export async function findEndpoint(prisma: SqlClient, id: string): Promise<EndpointRow | undefined> {
  const [row] = await prisma.$queryRawUnsafe<EndpointRow[]>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1::uuid`, id)
  return row
}

export const listEndpointRows = (prisma: SqlClient): Promise<EndpointRow[]> =>
  prisma.$queryRawUnsafe<EndpointRow[]>(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints ORDER BY created_at, id`)

/** The ids among `ids` that name a vault. */
export async function knownVaultIds(prisma: SqlClient, ids: readonly string[]): Promise<Set<string>> {
  const rows = await prisma.$queryRawUnsafe<{ id: string }[]>(
    `SELECT id FROM vaults WHERE id IN (SELECT value FROM json_array_elements_text($1::json))`,
    JSON.stringify(ids),
  )
  return new Set(rows.map((r) => r.id))
}

export async function insertEndpoint(
  prisma: SqlClient,
  e: { id: string; url: string; eventTypes: readonly string[]; vaultIds: readonly string[] | null; sealedSecret: string; createdAt: Date },
): Promise<EndpointRow> {
  const [row] = await prisma.$queryRawUnsafe<EndpointRow[]>(
    `INSERT INTO webhook_endpoints (id, url, event_types, vault_ids, secret, created_at)
     VALUES ($1::uuid, $2, ARRAY(SELECT json_array_elements_text($3::json)),
             CASE WHEN $4::json IS NULL THEN NULL ELSE ARRAY(SELECT json_array_elements_text($4::json)) END,
             $5, $6::timestamptz)
     RETURNING ${ENDPOINT_COLUMNS}`,
    e.id,
    e.url,
    JSON.stringify(e.eventTypes),
    e.vaultIds === null ? null : JSON.stringify(e.vaultIds),
    e.sealedSecret,
    e.createdAt.toISOString(),
  )
  return row!
}

/** Deletes the endpoint with its deliveries and their attempts; false when there was none. */
export async function deleteEndpointRow(prisma: SqlClient, id: string): Promise<boolean> {
  return (await prisma.$executeRawUnsafe(`DELETE FROM webhook_endpoints WHERE id = $1::uuid`, id)) > 0
}

export async function setEndpointDisabled(prisma: SqlClient, id: string, disabled: boolean, at: Date): Promise<EndpointRow | undefined> {
  const [row] = await prisma.$queryRawUnsafe<EndpointRow[]>(
    `UPDATE webhook_endpoints SET disabled_at = CASE WHEN $2::boolean THEN COALESCE(disabled_at, $3::timestamptz) END
     WHERE id = $1::uuid RETURNING ${ENDPOINT_COLUMNS}`,
    id,
    disabled,
    at.toISOString(),
  )
  return row
}

/** Every endpoint's sealed secret (for a re-seal after a key rotation). */
export const endpointSecrets = (prisma: SqlClient): Promise<{ id: string; secret: string }[]> =>
  prisma.$queryRawUnsafe<{ id: string; secret: string }[]>(`SELECT id::text AS id, secret FROM webhook_endpoints`)

/** Replaces a sealed secret unless it changed meanwhile; 1 when replaced. */
export const replaceSecret = (prisma: SqlClient, id: string, from: string, to: string): Promise<number> =>
  prisma.$executeRawUnsafe(`UPDATE webhook_endpoints SET secret = $2 WHERE id = $1::uuid AND secret = $3`, id, to, from)

// ---------------------------------------------------------------------------------------------
// Deliveries and their attempts

export interface DeliveryRow {
  id: string
  event_id: string
  type: string
  vault_id: string
  status: WebhookDeliveryStatus
  attempts: number
  next_attempt_at: Date
  retry_until: Date
  last_status_code: number | null
  last_error: string | null
  created_at: Date
  updated_at: Date
  succeeded_at: Date | null
  dead_at: Date | null
}

export interface AttemptRow {
  delivery_id: string
  attempt: number
  started_at: Date
  duration_ms: number
  status_code: number | null
  error: string | null
  response_body: string | null
}

const DELIVERY_SELECT = `
SELECT d.id::text AS id, d.event_id::text AS event_id, ev.type, ev.vault_id, d.status::text AS status, d.attempts,
       d.next_attempt_at, d.retry_until, d.last_status_code, d.last_error, d.created_at, d.updated_at,
       d.succeeded_at, d.dead_at
FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id`

/** An endpoint's deliveries, newest first, after the keyset position `after` (exclusive). */
export const deliveryPage = (
  prisma: SqlClient,
  endpointId: string,
  { status, after, take }: { status: WebhookDeliveryStatus | null; after: { createdAt: Date; id: string } | null; take: number },
): Promise<DeliveryRow[]> =>
  prisma.$queryRawUnsafe<DeliveryRow[]>(
    `${DELIVERY_SELECT}
     WHERE d.endpoint_id = $1::uuid
       AND ($2::text IS NULL OR d.status = $2::text::"WebhookDeliveryStatus")
       AND ($3::timestamptz IS NULL OR (d.created_at, d.id) < ($3::timestamptz, $4::uuid))
     ORDER BY d.created_at DESC, d.id DESC
     LIMIT $5::int`,
    endpointId,
    status,
    after ? after.createdAt.toISOString() : null,
    after ? after.id : null,
    take,
  )

/** The attempts of each delivery, oldest first. */
export async function attemptsOf(prisma: SqlClient, deliveryIds: readonly string[]): Promise<Map<string, AttemptRow[]>> {
  const byDelivery = new Map<string, AttemptRow[]>()
  if (deliveryIds.length === 0) return byDelivery
  const rows = await prisma.$queryRawUnsafe<AttemptRow[]>(
    `SELECT delivery_id::text AS delivery_id, attempt, started_at, duration_ms, status_code, error, response_body
     FROM webhook_delivery_attempts
     WHERE delivery_id IN (SELECT value::uuid FROM json_array_elements_text($1::json))
     ORDER BY delivery_id, started_at, id`,
    JSON.stringify(deliveryIds),
  )
  for (const r of rows) byDelivery.set(r.delivery_id, [...(byDelivery.get(r.delivery_id) ?? []), r])
  return byDelivery
}

/**
 * Makes one delivery of the endpoint due now with a fresh retry window (`until`), unless it is in
 * flight; undefined when the endpoint has no such delivery. NOTIFYs the workers when it reset one.
 */
export function replayDeliveryRow(prisma: TxClient, endpointId: string, deliveryId: string, now: Date, until: Date): Promise<DeliveryRow | undefined> {
  return prisma.$transaction(async (tx) => {
    const [found] = await tx.$queryRawUnsafe<{ status: WebhookDeliveryStatus }[]>(
      `SELECT status::text AS status FROM webhook_deliveries WHERE id = $1::uuid AND endpoint_id = $2::uuid FOR UPDATE`,
      deliveryId,
      endpointId,
    )
    if (!found) return undefined
    if (found.status !== 'delivering') {
      await tx.$executeRawUnsafe(
        `UPDATE webhook_deliveries
         SET status = 'pending', next_attempt_at = $2::timestamptz, retry_until = $3::timestamptz,
             retry_from_attempt = attempts, dead_at = NULL, updated_at = $2::timestamptz
         WHERE id = $1::uuid`,
        deliveryId,
        now.toISOString(),
        until.toISOString(),
      )
      await reopenLanes(tx, [endpointId])
      await notifyWorkers(tx)
    }
    const [row] = await tx.$queryRawUnsafe<DeliveryRow[]>(`${DELIVERY_SELECT} WHERE d.id = $1::uuid`, deliveryId)
    return row
  })
}

/**
 * Sends an event again to `endpointId`, or to every live endpoint subscribed to it: deliveries in
 * flight are left to finish; the others are (re)set to pending, due now. Undefined when there is
 * no such event; `matched` counts the endpoints it was meant for.
 */
export function replayEventRows(
  prisma: TxClient,
  eventId: string,
  endpointId: string | null,
  now: Date,
  until: Date,
): Promise<{ type: string; deliveries: number; matched: number } | undefined> {
  return prisma.$transaction(async (tx) => {
    const [event] = await tx.$queryRawUnsafe<{ type: string }[]>(`SELECT type FROM webhook_events WHERE id = $1::uuid`, eventId)
    if (!event) return undefined
    const [counts] = await tx.$queryRawUnsafe<{ deliveries: number; matched: number; endpoints: string[] }[]>(
      `WITH targets AS (
         SELECT e.id FROM webhook_endpoints e JOIN webhook_events ev ON ev.id = $1::uuid
         WHERE e.disabled_at IS NULL AND ev.type = ANY (e.event_types)
           AND (e.vault_ids IS NULL OR ev.vault_id = ANY (e.vault_ids))
           AND ($2::uuid IS NULL OR e.id = $2::uuid)
       ), upserted AS (
         INSERT INTO webhook_deliveries (event_id, endpoint_id, status, next_attempt_at, retry_until, created_at, updated_at)
         SELECT $1::uuid, t.id, 'pending', $3::timestamptz, $4::timestamptz, $3::timestamptz, $3::timestamptz FROM targets t
         ON CONFLICT (event_id, endpoint_id) DO UPDATE
           SET status = 'pending', next_attempt_at = EXCLUDED.next_attempt_at, retry_until = EXCLUDED.retry_until,
               retry_from_attempt = webhook_deliveries.attempts, dead_at = NULL, updated_at = EXCLUDED.updated_at
           WHERE webhook_deliveries.status <> 'delivering'
         RETURNING endpoint_id
       )
       SELECT (SELECT count(*) FROM upserted)::int AS deliveries, (SELECT count(*) FROM targets)::int AS matched,
              ARRAY(SELECT endpoint_id::text FROM upserted) AS endpoints`,
      eventId,
      endpointId,
      now.toISOString(),
      until.toISOString(),
    )
    if (counts!.deliveries > 0) {
      await reopenLanes(tx, counts!.endpoints)
      await notifyWorkers(tx)
    }
    return { type: event.type, deliveries: counts!.deliveries, matched: counts!.matched }
  })
}

/**
 * An operator's replay means "try now": it lifts the endpoints' backoff (their failure streak
 * stays, so a failure right away closes the lane for as long as it would have anyway).
 */
async function reopenLanes(tx: SqlClient, endpointIds: readonly string[]): Promise<void> {
  await tx.$executeRawUnsafe(
    `UPDATE webhook_endpoints SET backoff_until = NULL
     WHERE backoff_until IS NOT NULL AND id IN (SELECT value::uuid FROM json_array_elements_text($1::json))`,
    JSON.stringify(endpointIds),
  )
}
