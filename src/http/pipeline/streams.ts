import { AppError } from '../../core/errors.js'
import { subscriptionsOpen, subscriptionsRefused } from '../../core/metrics.js'
import type { StreamAnswer } from './answer.js'

// The open event streams of /graphql (subscriptions over SSE, src/graphql/sse.ts, and over WebSocket,
// src/http/pipeline/websocket.ts, which takes and releases places itself): admitted within
// SUBSCRIPTIONS_MAX per instance and SUBSCRIPTIONS_PER_IP per client (an IPv6 client: its network
// of RATE_LIMIT_IPV6_PREFIX bits), counted from the request until the stream ends (completed, cut
// by the client, or ended here on shutdown), and ended cleanly on shutdown: `event: complete`, then
// the connection closes, so clients reconnect to another instance instead of waiting for a
// timeout. A request asking for text/event-stream holds a place while it is answered even if its
// operation is a query (its answer is one event). The /graphql step (src/http/pipeline/graphql.ts)
// takes a place with `admit` and hands the answer's stream to `track`.

const encoder = new TextEncoder()
const COMPLETE = encoder.encode('event: complete\ndata:\n\n')

export interface Place {
  release(): void
}

export interface EventStreams {
  /** Takes a place for a stream of `client`'s, or throws the refusal (unavailable, rate_limited). */
  admit(client: string): Place
  /** The answer's stream, held in `place` until it ends; ended with `event: complete` on `close`. */
  track(answer: StreamAnswer, place: Place): StreamAnswer
  /** Streams open now. */
  readonly open: number
  /** Refuses new streams from now on and ends every open one with `event: complete`. */
  close(): void
}

export const wantsEventStream = (accept: string | undefined) => accept !== undefined && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept)

export function eventStreams({ max, perIp }: { max: number; perIp: number }): EventStreams {
  const byIp = new Map<string, number>()
  const ends = new Set<() => void>()
  let open = 0
  let closed = false

  const refuse = (reason: 'instance' | 'ip' | 'draining', error: AppError) => {
    subscriptionsRefused.inc({ reason })
    return error
  }

  const admit = (ip: string): Place => {
    if (closed) throw refuse('draining', new AppError('unavailable', 'The gateway is shutting down; subscribe again (another instance will answer).'))
    if (open >= max)
      throw refuse(
        'instance',
        new AppError('unavailable', `This instance has its maximum of ${max} subscriptions open; try again shortly.`, { headers: { 'Retry-After': '5' } }),
      )
    const mine = byIp.get(ip) ?? 0
    if (mine >= perIp)
      throw refuse('ip', new AppError('rate_limited', `At most ${perIp} subscriptions may be open at once from one client IP; close one first.`))
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

  const track = (answer: StreamAnswer, place: Place): StreamAnswer => {
    const reader = answer.stream.getReader()
    let finished = false
    let controller!: ReadableStreamDefaultController<Uint8Array>
    const finish = () => {
      finished = true
      ends.delete(end)
      place.release()
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
    const stream = new ReadableStream<Uint8Array>({
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
    })
    return { ...answer, stream }
  }

  return {
    admit,
    track,
    get open() {
      return open
    },
    close() {
      closed = true
      for (const end of [...ends]) end()
    },
  }
}
