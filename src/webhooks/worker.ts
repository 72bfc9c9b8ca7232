import { systemClock, type Clock } from '../clock.js'
import type { PrismaClient } from '../generated/prisma/client.js'
import { logger, type Logger } from '../log.js'
import type { WebhookBody, WebhookEventType } from './events.js'
import type { OutboundPolicy } from './outbound.js'
import { DEFAULT_RETRY, nextAttemptAt, type RetryPolicy } from './retry.js'
import type { SecretBox } from './secrets.js'
import { sendWebhook, type AttemptResult } from './send.js'
import type { WakeupSource } from './wakeups.js'

// The delivery worker. Every instance runs one; together they keep at most one delivery in flight
// per endpoint, and an instance that dies mid-delivery leaves its work to the others.
//
// At most one in flight: the lock is the endpoint row, not the delivery rows. SKIP LOCKED on
// deliveries alone would let two instances take two different deliveries of one endpoint at the
// same time. A claim leases endpoints (lease_token, lease_expires_at) in an UPDATE whose
// `FOR UPDATE … SKIP LOCKED` sub-select only takes endpoints with no live lease; PostgreSQL
// re-checks that condition on the newest row version before locking, so of two instances racing
// for an endpoint exactly one gets the lease, and the other skips it. The lease (and the
// delivery's `next_attempt_at`, which doubles as its visibility timeout) outlives the HTTP timeout,
// so the claim transaction is short: claim and commit, send with no transaction open, then record
// the result in one statement that only counts while the lease token is still ours.
//
// Killed mid-delivery: the endpoint's lease and its `delivering` row run out together; the next
// claim after that takes the endpoint again, logs the lost attempt as abandoned and retries it.
// Delivery is therefore at least once; receivers deduplicate on `webhook-id`.

export interface WebhookWorkerOptions {
  prisma: PrismaClient
  secrets: SecretBox
  policy: OutboundPolicy
  clock?: Clock
  retry?: RetryPolicy
  /** One attempt's limit: DNS, connect, TLS and response headers (10 s). */
  timeoutMs?: number
  /** How long a claim holds an endpoint (60 s); at least timeoutMs + 5 s. */
  leaseMs?: number
  /** Endpoints served at once by this instance (4). */
  concurrency?: number
  /** The longest sleep without a wake-up (2 s). */
  idlePollMs?: number
  wakeups?: WakeupSource
  /** Events older than this whose deliveries are all finished are deleted (30 days; 0 keeps all). */
  retentionMs?: number
  /** For the jitter; Math.random unless given. */
  random?: () => number
  log?: Logger
}

export interface ClaimedDelivery {
  deliveryId: string
  endpointId: string
  eventId: string
  /** 1 for the first attempt. */
  attempt: number
  retryFromAttempt: number
  retryUntil: Date
  leaseToken: string
  url: string
  sealedSecret: string
  type: WebhookEventType
  payload: Record<string, unknown>
  eventCreatedAt: Date
}

export interface DeliveryOutcome {
  deliveryId: string
  endpointId: string
  eventId: string
  attempt: number
  /** The delivery's status after this attempt. */
  status: 'succeeded' | 'pending' | 'dead'
  statusCode: number | null
  error: string | null
  nextAttemptAt: Date | null
  /** False when the lease had run out (another instance owned the delivery by then) or the endpoint was deleted. */
  recorded: boolean
}

export interface WebhookWorker {
  /** Claims up to `limit` deliveries (one per endpoint) and commits the claim. */
  claim(limit?: number): Promise<ClaimedDelivery[]>
  /** Sends one claimed delivery and records the outcome. */
  deliver(claimed: ClaimedDelivery): Promise<DeliveryOutcome>
  /** One round: claim, send them all in parallel, record. */
  runOnce(): Promise<DeliveryOutcome[]>
  start(): void
  /** Stops claiming and waits for the deliveries in flight. */
  stop(): Promise<void>
}

const ABANDONED = 'abandoned: no result within the lease (the delivering instance stopped or lost its database)'

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
    AND due.next_attempt_at <= $1::timestamptz
  ORDER BY due.next_attempt_at
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
       c.retry_from_attempt, c.retry_until, c.lease_token::text AS lease_token, e.url, e.secret,
       ev.type, ev.payload, ev.created_at
FROM claimed c
JOIN webhook_endpoints e ON e.id = c.endpoint_id
JOIN webhook_events ev ON ev.id = c.event_id`

const RELEASE_SQL = `
UPDATE webhook_endpoints SET lease_token = NULL, lease_expires_at = NULL
WHERE lease_token IN (SELECT value::uuid FROM json_array_elements_text($1::json))`

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
  UPDATE webhook_endpoints SET lease_token = NULL, lease_expires_at = NULL
  WHERE id = $11::uuid AND lease_token = $2::uuid
)
SELECT count(*)::int AS recorded FROM d`

const PRUNE_SQL = `
DELETE FROM webhook_events
WHERE id IN (
  SELECT ev.id FROM webhook_events ev
  WHERE ev.created_at < $1::timestamptz
    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = ev.id AND d.status IN ('pending', 'delivering'))
  LIMIT 5000
)`

interface PickRow {
  delivery_id: string
  endpoint_id: string
  event_id: string
  attempts: number
  retry_from_attempt: number
  retry_until: Date
  lease_token: string
  url: string
  secret: string
  type: WebhookEventType
  payload: Record<string, unknown>
  created_at: Date
}

const PRUNE_EVERY_MS = 60 * 60_000

export function createWebhookWorker(options: WebhookWorkerOptions): WebhookWorker {
  const { prisma, secrets, policy } = options
  const clock = options.clock ?? systemClock
  const retry = options.retry ?? DEFAULT_RETRY
  const timeoutMs = options.timeoutMs ?? 10_000
  const leaseMs = options.leaseMs ?? 60_000
  const concurrency = options.concurrency ?? 4
  const idlePollMs = options.idlePollMs ?? 2_000
  const retentionMs = options.retentionMs ?? 30 * 24 * 60 * 60_000
  const random = options.random ?? Math.random
  const log = () => options.log ?? logger
  if (leaseMs < timeoutMs + 5_000) throw new Error('webhook worker: leaseMs must exceed timeoutMs by at least 5 s, or a slow attempt could outlive its lease')

  async function claim(limit = concurrency): Promise<ClaimedDelivery[]> {
    const now = clock()
    const leaseUntil = new Date(now.getTime() + leaseMs)
    const rows = await prisma.$transaction(async (tx) => {
      const leased = await tx.$queryRawUnsafe<{ id: string; token: string }[]>(LEASE_SQL, now.toISOString(), leaseUntil.toISOString(), limit)
      if (leased.length === 0) return []
      const picked = await tx.$queryRawUnsafe<PickRow[]>(PICK_SQL, JSON.stringify(leased), now.toISOString(), leaseUntil.toISOString(), ABANDONED)
      // An endpoint whose due delivery was finished by its previous holder between our two
      // statements: give the lease back at once rather than idle it until it expires.
      const used = new Set(picked.map((p) => p.lease_token))
      const unused = leased.filter((l) => !used.has(l.token)).map((l) => l.token)
      if (unused.length > 0) await tx.$executeRawUnsafe(RELEASE_SQL, JSON.stringify(unused))
      return picked
      // READ COMMITTED whatever the server's default: the lease relies on its re-check of a row
      // updated since the statement began (REPEATABLE READ would fail the claim instead).
    }, { isolationLevel: 'ReadCommitted' })
    return rows.map((r) => ({
      deliveryId: r.delivery_id,
      endpointId: r.endpoint_id,
      eventId: r.event_id,
      attempt: r.attempts,
      retryFromAttempt: r.retry_from_attempt,
      retryUntil: new Date(r.retry_until),
      leaseToken: r.lease_token,
      url: r.url,
      sealedSecret: r.secret,
      type: r.type,
      payload: r.payload,
      eventCreatedAt: new Date(r.created_at),
    }))
  }

  async function attempt(claimed: ClaimedDelivery): Promise<AttemptResult> {
    let secret: string
    try {
      secret = secrets.open(claimed.sealedSecret, claimed.endpointId)
    } catch (e) {
      log().error({ endpointId: claimed.endpointId, err: (e as Error).message }, 'webhook secret does not open; check WEBHOOK_SECRET_KEY')
      return { ok: false, statusCode: null, error: `the signing secret does not open: ${(e as Error).message}`, responseBody: null }
    }
    const body: WebhookBody = { type: claimed.type, timestamp: claimed.eventCreatedAt.toISOString(), data: claimed.payload }
    return sendWebhook(claimed.url, { id: claimed.eventId, body: JSON.stringify(body), secret, timestamp: clock() }, { policy, timeoutMs })
  }

  async function deliver(claimed: ClaimedDelivery): Promise<DeliveryOutcome> {
    const started = clock()
    const t0 = performance.now()
    const result = await attempt(claimed)
    const durationMs = Math.round(performance.now() - t0)
    const now = clock()
    const next = result.ok ? null : nextAttemptAt(now, claimed.attempt - claimed.retryFromAttempt, claimed.retryUntil, retry, random)
    const status = result.ok ? 'succeeded' : next ? 'pending' : 'dead'
    const [row] = await prisma.$queryRawUnsafe<{ recorded: number }[]>(
      RECORD_SQL,
      claimed.deliveryId,
      claimed.leaseToken,
      status,
      next?.toISOString() ?? null,
      result.statusCode,
      result.error,
      now.toISOString(),
      started.toISOString(),
      durationMs,
      result.responseBody,
      claimed.endpointId,
    )
    const recorded = (row?.recorded ?? 0) > 0
    const fields = { deliveryId: claimed.deliveryId, endpointId: claimed.endpointId, attempt: claimed.attempt, status, statusCode: result.statusCode }
    if (!recorded) log().warn(fields, 'webhook attempt not recorded: its lease ran out (another instance owns the delivery now) or the endpoint was deleted')
    else if (status === 'dead') log().warn({ ...fields, error: result.error }, 'webhook delivery dead-lettered after its retry window')
    else if (!result.ok) log().info({ ...fields, error: result.error, nextAttemptAt: next }, 'webhook delivery failed; retrying later')
    else log().debug(fields, 'webhook delivered')
    return { deliveryId: claimed.deliveryId, endpointId: claimed.endpointId, eventId: claimed.eventId, attempt: claimed.attempt, status, statusCode: result.statusCode, error: result.error, nextAttemptAt: next, recorded }
  }

  async function runOnce(): Promise<DeliveryOutcome[]> {
    const claimed = await claim()
    // Every send is awaited, even when recording another one fails, so that stop() drains them all.
    const settled = await Promise.allSettled(claimed.map(deliver))
    const outcomes: DeliveryOutcome[] = []
    for (const [i, s] of settled.entries()) {
      if (s.status === 'fulfilled') outcomes.push(s.value)
      else log().warn({ deliveryId: claimed[i]!.deliveryId, err: (s.reason as Error)?.message }, 'webhook attempt not recorded; its lease will run out and it will be retried')
    }
    if (claimed.length > 0 && outcomes.length === 0) throw new Error('no webhook attempt of this round could be recorded')
    return outcomes
  }

  let running: Promise<void> | undefined
  let stopping = false
  let woken = false
  let wakeIdle: (() => void) | undefined
  let lastPrune = 0

  const wake = () => {
    woken = true
    wakeIdle?.()
  }

  function idle(ms: number): Promise<void> {
    if (woken || stopping) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        wakeIdle = undefined
        resolve()
      }
      wakeIdle = done
    })
  }

  async function prune() {
    if (retentionMs <= 0 || Date.now() - lastPrune < PRUNE_EVERY_MS) return
    lastPrune = Date.now()
    const removed = await prisma.$executeRawUnsafe(PRUNE_SQL, new Date(clock().getTime() - retentionMs).toISOString())
    if (removed > 0) log().info({ removed }, 'webhook events past retention deleted')
  }

  async function loop(): Promise<void> {
    let failures = 0
    while (!stopping) {
      woken = false
      try {
        const outcomes = await runOnce()
        failures = 0
        if (outcomes.length > 0) continue
        await prune()
      } catch (e) {
        failures++
        log().warn({ err: (e as Error).message }, 'webhook worker: claim failed; retrying')
        await idle(Math.min(30_000, 500 * 2 ** Math.min(failures, 6)))
        continue
      }
      await idle(idlePollMs)
    }
  }

  let unsubscribe: (() => void) | undefined
  return {
    claim,
    deliver,
    runOnce,
    start() {
      if (running) return
      stopping = false
      unsubscribe = options.wakeups?.subscribe(wake)
      running = loop()
    },
    async stop() {
      stopping = true
      unsubscribe?.()
      unsubscribe = undefined
      wakeIdle?.()
      await running
      running = undefined
    },
  }
}
