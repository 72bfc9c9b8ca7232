import { systemClock, type Clock } from '../core/clock.js'
import { logger, type Logger } from '../core/log.js'
import type { WebhookBody, WebhookEventType } from './events.js'
import type { OutboundPolicy } from './outbound.js'
import { DEFAULT_RETRY, nextAttemptAt, type RetryPolicy } from './retry.js'
import type { SecretBox } from './secrets.js'
import { sendWebhook, type AttemptResult } from './send.js'
import { claimDeliveries, pruneEvents, recordAttempt, type TxClient } from './store.js'
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
// Lanes: each endpoint is a lane of its own, so a slow or failing receiver costs the others
// nothing. (1) One delivery in flight per endpoint (the lease above): a receiver that hangs holds
// one request, never more. (2) Slots, not rounds: each of the `concurrency` slots claims its next
// delivery as soon as its own attempt ends, never waiting for the other slots' attempts. (3) An
// attempt with no answer after `slowAfterMs` gives its slot back and finishes in the background
// (up to `slowLimit` such attempts, each still one endpoint's one lease), so hanging receivers
// cannot fill the slots that answering ones need. (4) A failed attempt closes the endpoint's lane
// (`webhook_endpoints.backoff_until`, from its failures in a row, retry.ts): none of its
// deliveries — new ones included — is attempted before then; a success reopens it.
//
// Killed mid-delivery: the endpoint's lease and its `delivering` row run out together; the next
// claim after that takes the endpoint again, logs the lost attempt as abandoned and retries it.
// Delivery is therefore at least once; receivers deduplicate on `webhook-id`.

export interface WebhookWorkerOptions {
  prisma: TxClient
  secrets: SecretBox
  policy: OutboundPolicy
  clock?: Clock
  retry?: RetryPolicy
  /** One attempt's limit: DNS, connect, TLS and response headers (10 s). */
  timeoutMs?: number
  /** How long a claim holds an endpoint (60 s); at least timeoutMs + 5 s. */
  leaseMs?: number
  /** Attempts waiting on an answering receiver at once, in this instance (4). */
  concurrency?: number
  /** An attempt with no answer after this long frees its slot and finishes in the background (2 s). */
  slowAfterMs?: number
  /** The most attempts finishing in the background at once (16 × concurrency); past it they keep their slots. */
  slowLimit?: number
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
  /** The endpoint's failed attempts in a row before this one. */
  endpointFailures: number
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
  /** The endpoint's lane is closed until then (null after a success). */
  endpointBackoffUntil: Date | null
  /** False when the lease had run out (another instance owned the delivery by then) or the endpoint was deleted. */
  recorded: boolean
}

export interface WebhookWorker {
  /** Claims up to `limit` deliveries (one per endpoint) and commits the claim. */
  claim(limit?: number): Promise<ClaimedDelivery[]>
  /** Sends one claimed delivery and records the outcome. */
  deliver(claimed: ClaimedDelivery): Promise<DeliveryOutcome>
  /** One round: claim, send them all in parallel, record (tests and tools; start() runs slots instead). */
  runOnce(): Promise<DeliveryOutcome[]>
  start(): void
  /** Stops claiming and waits for the deliveries in flight (those in the background included). */
  stop(): Promise<void>
}

const ABANDONED = 'abandoned: no result within the lease (the delivering instance stopped or lost its database)'

const PRUNE_EVERY_MS = 60 * 60_000

// The lane's wait has no window of its own: each delivery's window (retry_until) decides when it is dead.
const NEVER = new Date(8.64e15)

export function createWebhookWorker(options: WebhookWorkerOptions): WebhookWorker {
  const { prisma, secrets, policy } = options
  const clock = options.clock ?? systemClock
  const retry = options.retry ?? DEFAULT_RETRY
  const timeoutMs = options.timeoutMs ?? 10_000
  const leaseMs = options.leaseMs ?? 60_000
  const concurrency = options.concurrency ?? 4
  const slowAfterMs = options.slowAfterMs ?? 2_000
  const slowLimit = options.slowLimit ?? 16 * concurrency
  const idlePollMs = options.idlePollMs ?? 2_000
  const retentionMs = options.retentionMs ?? 30 * 24 * 60 * 60_000
  const random = options.random ?? Math.random
  const log = () => options.log ?? logger
  if (leaseMs < timeoutMs + 5_000) throw new Error('webhook worker: leaseMs must exceed timeoutMs by at least 5 s, or a slow attempt could outlive its lease')

  async function claim(limit = concurrency): Promise<ClaimedDelivery[]> {
    const now = clock()
    const leaseUntil = new Date(now.getTime() + leaseMs)
    const rows = await claimDeliveries(prisma, { now, leaseUntil, limit, abandonedNote: ABANDONED })
    return rows.map((r) => ({
      deliveryId: r.delivery_id,
      endpointId: r.endpoint_id,
      eventId: r.event_id,
      attempt: r.attempts,
      retryFromAttempt: r.retry_from_attempt,
      retryUntil: new Date(r.retry_until),
      leaseToken: r.lease_token,
      endpointFailures: r.failure_streak,
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
    // The lane's wait grows with the endpoint's failures in a row, whichever deliveries failed:
    // a receiver that is down is tried ever more rarely, not once per new event. It ends by this
    // delivery's window end, so the last attempt retry.ts promises is still made then.
    const failures = claimed.endpointFailures + 1
    const laneClosedUntil = result.ok
      ? null
      : (nextAttemptAt(now, failures, claimed.retryUntil, retry, random) ?? nextAttemptAt(now, failures, NEVER, retry, random))
    const recorded = await recordAttempt(prisma, {
      deliveryId: claimed.deliveryId,
      endpointId: claimed.endpointId,
      leaseToken: claimed.leaseToken,
      status,
      nextAttemptAt: next,
      endpointBackoffUntil: laneClosedUntil,
      statusCode: result.statusCode,
      error: result.error,
      responseBody: result.responseBody,
      startedAt: started,
      finishedAt: now,
      durationMs,
    })
    const fields = { deliveryId: claimed.deliveryId, endpointId: claimed.endpointId, attempt: claimed.attempt, status, statusCode: result.statusCode }
    if (!recorded) log().warn(fields, 'webhook attempt not recorded: its lease ran out (another instance owns the delivery now) or the endpoint was deleted')
    else if (status === 'dead') log().warn({ ...fields, error: result.error }, 'webhook delivery dead-lettered after its retry window')
    else if (!result.ok) log().info({ ...fields, error: result.error, nextAttemptAt: next }, 'webhook delivery failed; retrying later')
    else log().debug(fields, 'webhook delivered')
    return {
      deliveryId: claimed.deliveryId,
      endpointId: claimed.endpointId,
      eventId: claimed.eventId,
      attempt: claimed.attempt,
      status,
      statusCode: result.statusCode,
      error: result.error,
      nextAttemptAt: next,
      endpointBackoffUntil: laneClosedUntil,
      recorded,
    }
  }

  async function runOnce(): Promise<DeliveryOutcome[]> {
    const claimed = await claim()
    // Every send is awaited, even when recording another one fails, so that stop() drains them all.
    const settled = await Promise.allSettled(claimed.map(deliver))
    const outcomes: DeliveryOutcome[] = []
    for (const [i, s] of settled.entries()) {
      if (s.status === 'fulfilled') outcomes.push(s.value)
      else
        log().warn(
          { deliveryId: claimed[i]!.deliveryId, err: (s.reason as Error)?.message },
          'webhook attempt not recorded; its lease will run out and it will be retried',
        )
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
    const removed = await pruneEvents(prisma, new Date(clock().getTime() - retentionMs))
    if (removed > 0) log().info({ removed }, 'webhook events past retention deleted')
  }

  // Every attempt in flight (for stop()), how many hold a slot, how many run in the background.
  const inFlight = new Set<Promise<void>>()
  let slotsHeld = 0
  let slow = 0

  function launch(claimed: ClaimedDelivery) {
    slotsHeld++
    let holdsSlot = true
    let inBackground = false
    const freeSlot = () => {
      if (!holdsSlot) return
      holdsSlot = false
      slotsHeld--
      wake()
    }
    const timer = setTimeout(() => {
      if (slow >= slowLimit) return
      slow++
      inBackground = true
      freeSlot()
    }, slowAfterMs)
    const attempt: Promise<void> = deliver(claimed)
      .then(
        () => undefined,
        (e: unknown) =>
          log().warn(
            { deliveryId: claimed.deliveryId, err: (e as Error)?.message },
            'webhook attempt not recorded; its lease will run out and it will be retried',
          ),
      )
      .finally(() => {
        clearTimeout(timer)
        if (inBackground) slow--
        freeSlot()
        inFlight.delete(attempt)
      })
    inFlight.add(attempt)
  }

  async function loop(): Promise<void> {
    let failures = 0
    while (!stopping) {
      woken = false
      const free = concurrency - slotsHeld
      // All slots busy: a slot coming free wakes us (so does stop()); the poll is only a backstop.
      if (free <= 0) {
        await idle(idlePollMs)
        continue
      }
      let claimed: ClaimedDelivery[]
      try {
        claimed = await claim(free)
        failures = 0
      } catch (e) {
        failures++
        log().warn({ err: (e as Error).message }, 'webhook worker: claim failed; retrying')
        await idle(Math.min(30_000, 500 * 2 ** Math.min(failures, 6)))
        continue
      }
      for (const c of claimed) launch(c)
      // Every free slot was filled: there may be more due work for the next free slot.
      if (claimed.length === free) continue
      if (claimed.length === 0 && slotsHeld === 0) {
        try {
          await prune()
        } catch (e) {
          log().warn({ err: (e as Error).message }, 'webhook worker: pruning old events failed')
        }
      }
      await idle(idlePollMs)
    }
    await Promise.allSettled([...inFlight])
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
