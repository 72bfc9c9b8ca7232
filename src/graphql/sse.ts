import type { ExecutionResult, GraphQLError } from 'graphql'
import { isAsyncIterable, type Plugin } from 'graphql-yoga'

// Subscriptions answered as Server-Sent Events (the GraphQL-over-SSE protocol's "distinct
// connections" mode that Yoga speaks: `event: next` with each result, `event: complete` at the
// end). Yoga's own processor does the same but pings every 12 s (300 ms under NODE_ENV=test),
// fixed; this one sends its heartbeat comment every SUBSCRIPTION_HEARTBEAT_MS, so proxies with
// shorter idle timeouts keep the connection, and the interval is the operator's. Everything else
// (queries sent with Accept: text/event-stream, errors before the stream) stays Yoga's.

const encoder = new TextEncoder()
const HEARTBEAT = encoder.encode(':\n\n')

export type Result = ExecutionResult & { extensions?: Record<string, unknown> }

/** Error extensions as sent: without the HTTP hints and internal flags Yoga keeps in them (undefined when nothing is left). */
export function withoutHttpHints(extensions: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const { http: _http, unexpected: _unexpected, ...rest } = extensions ?? {}
  return Object.keys(rest).length ? rest : undefined
}

/** The result as sent (over SSE and WebSocket: src/http/pipeline/websocket.ts). */
export function formatResult(result: Result): Result {
  const errors = result.errors?.map((e: GraphQLError) => {
    const json = e.toJSON ? e.toJSON() : (e as unknown as Record<string, unknown>)
    return { ...json, extensions: withoutHttpHints(json.extensions as Record<string, unknown> | undefined) }
  }) as unknown as GraphQLError[] | undefined
  const extensions = result.extensions ? (({ http: _http, ...rest }) => (Object.keys(rest).length ? rest : undefined))(result.extensions) : undefined
  return { ...result, errors, extensions }
}

const serialise = (result: Result): string => JSON.stringify(formatResult(result))

/** The SSE answer of a subscription's event stream, with a heartbeat comment every `heartbeatMs`. */
export function eventStreamResponse(results: AsyncIterable<Result>, heartbeatMs: number): Response {
  const iterator = results[Symbol.asyncIterator]()
  let heartbeat: NodeJS.Timeout | undefined
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      // At once: some clients see no headers until the first bytes.
      controller.enqueue(HEARTBEAT)
      heartbeat = setInterval(() => {
        if (controller.desiredSize === null) clearInterval(heartbeat)
        else if (controller.desiredSize > 0) controller.enqueue(HEARTBEAT)
      }, heartbeatMs)
    },
    async pull(controller) {
      try {
        const { done, value } = await iterator.next()
        if (value != null) controller.enqueue(encoder.encode(`event: next\ndata: ${serialise(value)}\n\n`))
        if (done) {
          clearInterval(heartbeat)
          controller.enqueue(encoder.encode('event: complete\ndata:\n\n'))
          controller.close()
        }
      } catch (e) {
        clearInterval(heartbeat)
        controller.error(e)
      }
    },
    async cancel() {
      // The client went away (or the stream was ended on shutdown): the subscription unregisters.
      clearInterval(heartbeat)
      await iterator.return?.()
    },
  })
  return new Response(stream, { status: 200, headers: { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' } })
}

/** Yoga plugin: subscription streams go out through eventStreamResponse (see above). */
export function useEventStreamHeartbeat(heartbeatMs: number): Plugin {
  // The requests whose operation is a subscription (an incremental query, @defer/@stream, is a
  // stream too, and keeps the processor Yoga chose for it: multipart/mixed or its own SSE).
  const subscriptions = new WeakSet<Request>()
  return {
    onSubscribe({ args }) {
      const request = (args.contextValue as { request?: Request }).request
      if (request) subscriptions.add(request)
    },
    onResultProcess({ request, result, resultProcessor, setResultProcessor }) {
      if (!isAsyncIterable(result) || !subscriptions.has(request)) return
      // A subscription whose client accepts no event stream is answered 406: its source stream,
      // already subscribed, is closed here (nothing else would, and its listeners would stay).
      if (!resultProcessor) {
        void Promise.resolve(result[Symbol.asyncIterator]().return?.()).catch(() => {})
        return
      }
      // A subscription for which Yoga chose a processor goes out as SSE with the configured heartbeat
      // (the only transport Yoga offers subscriptions).
      setResultProcessor((r) => eventStreamResponse(r as AsyncIterable<Result>, heartbeatMs), 'text/event-stream')
    },
  }
}
