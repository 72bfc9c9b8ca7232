import type { MiddlewareHandler } from 'hono'
import { AppError } from '../../core/errors.js'
import { subscriptionsOpen, subscriptionsRefused } from '../../core/metrics.js'
import type { AppEnv } from '../env.js'
import { graphqlErrorResponse } from '../errors.js'
import { type ClientIdentityConfig, clientId } from './rate-limit.js'

// The open event streams of /graphql (subscriptions over SSE, src/graphql/sse.ts): admitted within
// SUBSCRIPTIONS_MAX per instance and SUBSCRIPTIONS_PER_IP per client (an IPv6 client: its network of RATE_LIMIT_IPV6_PREFIX bits), counted from the request
// until the stream ends (completed, cut by the client, or ended here on shutdown), and ended
// cleanly on shutdown: `event: complete`, then the connection closes, so clients reconnect to
// another instance instead of waiting for a timeout. A request asking for text/event-stream holds
// a place while it is answered even if its operation is a query (its answer is one event).

const encoder = new TextEncoder()
const COMPLETE = encoder.encode('event: complete\ndata:\n\n')

export interface EventStreams {
  /** For /graphql, after the per-IP rate limit. */
  middleware: MiddlewareHandler<AppEnv>
  /** Streams open now. */
  readonly open: number
  /** Refuses new streams from now on and ends every open one with `event: complete`. */
  close(): void
}

const wantsEventStream = (accept: string | undefined) => accept !== undefined && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept)

export function eventStreams({ max, perIp, who }: { max: number; perIp: number; who: ClientIdentityConfig }): EventStreams {
  const byIp = new Map<string, number>()
  const ends = new Set<() => void>()
  let open = 0
  let closed = false

  const refuse = (reason: 'instance' | 'ip' | 'draining', error: AppError) => {
    subscriptionsRefused.inc({ reason })
    return error
  }

  /** Takes a place for a stream from `ip`, or says why not. */
  const admit = (ip: string): { release: () => void } | AppError => {
    if (closed) return refuse('draining', new AppError('unavailable', 'The gateway is shutting down; subscribe again (another instance will answer).'))
    if (open >= max)
      return refuse(
        'instance',
        new AppError('unavailable', `This instance has its maximum of ${max} subscriptions open; try again shortly.`, { headers: { 'Retry-After': '5' } }),
      )
    const mine = byIp.get(ip) ?? 0
    if (mine >= perIp)
      return refuse('ip', new AppError('rate_limited', `At most ${perIp} subscriptions may be open at once from one client IP; close one first.`))
    open++
    byIp.set(ip, mine + 1)
    subscriptionsOpen.set(open)
    let held = true
    return {
      release: () => {
        if (!held) return
        held = false
        open--
        const n = (byIp.get(ip) ?? 1) - 1
        if (n > 0) byIp.set(ip, n)
        else byIp.delete(ip)
        subscriptionsOpen.set(open)
      },
    }
  }

  const middleware: MiddlewareHandler<AppEnv> = async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'POST') return next()
    const ip = clientId(c, who)
    // Asked for by Accept: the place is taken before the operation runs, so concurrent requests
    // cannot overshoot. A subscription sent with Accept */* (curl's default) is answered with a
    // stream too: its place is taken once the answer says so.
    let place: { release: () => void } | undefined
    if (wantsEventStream(c.req.header('accept'))) {
      const admitted = admit(ip)
      if (admitted instanceof AppError) throw admitted
      place = admitted
    }
    try {
      await next()
    } catch (e) {
      place?.release()
      throw e
    }
    const res = c.res
    if (!res.body || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      place?.release()
      return
    }
    if (!place) {
      const admitted = admit(ip)
      if (admitted instanceof AppError) {
        await res.body.cancel().catch(() => {})
        c.res = graphqlErrorResponse(c, admitted)
        return
      }
      place = admitted
    }
    const release = place.release
    const reader = res.body.getReader()
    let finished = false
    let controller!: ReadableStreamDefaultController<Uint8Array>
    const finish = () => {
      finished = true
      ends.delete(end)
      release()
    }
    // Shutdown: the subscription is stopped (its listeners removed), the client told it is complete.
    const end = () => {
      if (finished) return
      finish()
      reader.cancel().catch(() => {})
      try {
        controller.enqueue(COMPLETE)
        controller.close()
      } catch {
        // Already errored by the client's disconnect.
      }
    }
    ends.add(end)
    c.res = new Response(
      new ReadableStream<Uint8Array>({
        start(ctrl) {
          controller = ctrl
        },
        async pull(ctrl) {
          try {
            const { done, value } = await reader.read()
            if (finished) return
            if (done) {
              finish()
              ctrl.close()
            } else ctrl.enqueue(value)
          } catch (e) {
            if (finished) return
            finish()
            ctrl.error(e)
          }
        },
        cancel(reason) {
          // The client went away: Yoga's stream is cancelled in turn, which ends the subscription.
          if (!finished) finish()
          return reader.cancel(reason)
        },
      }),
      { status: res.status, statusText: res.statusText, headers: res.headers },
    )
  }

  return {
    middleware,
    get open() {
      return open
    },
    close() {
      closed = true
      for (const end of [...ends]) end()
    },
  }
}
