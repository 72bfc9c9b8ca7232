import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import { getRequestListener } from '@hono/node-server'
import { logger } from '../../core/log.js'
import type { HandOn } from '../env.js'
import { type Answer, type HandBack, type HotHandler, isAnswer, nodeExchange } from './exchange.js'

// The gateway's node:http request listener (docs/adr/0004-hot-path.md): the hot routes are
// answered from the IncomingMessage and written to the ServerResponse directly; every other
// request goes to @hono/node-server's listener around the app, as before. A hot request given
// back (its body read, its rate limit counted) reaches the app as a Web Request carrying what was
// learnt of it, like the early answers' hand-on (src/http/early-answers.ts).

type Fetch = (request: Request, env: unknown) => Promise<Response>

/** Writes an answer; Content-Length always (no chunked framing for a body known whole). */
export function writeAnswer(res: ServerResponse, answer: Answer): void {
  if (answer.body === null) {
    res.writeHead(answer.status, answer.headers)
    res.end()
    return
  }
  answer.headers['content-length'] = String(Buffer.byteLength(answer.body))
  res.writeHead(answer.status, answer.headers)
  res.end(answer.body)
}

/** Writes a Web Response (a request the hot path gave back to the app). */
async function writeResponse(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, name) => {
    headers[name] = value
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) headers['set-cookie'] = cookies
  if (!response.body) {
    res.writeHead(response.status, headers)
    res.end()
    return
  }
  res.writeHead(response.status, headers)
  // A client that goes away cancels the body: an event stream (a subscription sent with Accept
  // */*, src/http/middleware/event-streams.ts) then ends and unregisters instead of writing its
  // heartbeat to a closed socket for ever.
  const reader = response.body.getReader()
  const cancel = () => void reader.cancel().catch(() => {})
  res.once('close', cancel)
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      res.write(value)
    }
  } finally {
    res.off('close', cancel)
  }
  res.end()
}

function requestOf(req: IncomingMessage, url: string, body: string | undefined): Request {
  const headers = new Headers()
  const raw = req.rawHeaders
  for (let i = 0; i < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!)
  return new Request(url, { method: req.method, headers, body })
}

/** `fetch`: the app without its hot path (early answers, then the Hono routes). */
export function nodeListener(hot: HotHandler, fetch: Fetch): RequestListener {
  const general = getRequestListener(fetch as never)
  const handBack = async (req: IncomingMessage, res: ServerResponse, url: string, out: HandBack) => {
    // Counted already: the early answers leave it to the routes (they skip a request handed on).
    const env = { incoming: req, outgoing: res, ...(out.counted ? { handOn: { counted: out.counted } satisfies HandOn } : {}) }
    await writeResponse(res, await fetch(requestOf(req, url, out.body), env))
  }
  return (req, res) => {
    const exchange = nodeExchange(req, res)
    const work = exchange && hot(exchange)
    if (!work) {
      void general(req, res)
      return
    }
    work
      .then((out) => (isAnswer(out) ? writeAnswer(res, out) : handBack(req, res, exchange.url, out)))
      .catch((err: unknown) => {
        // The hot handlers answer their own errors; this is a client gone before its body was read
        // (nobody to answer), or a failure to write.
        if (req.complete && !res.destroyed) logger.warn({ err }, 'hot path answer failed')
        res.destroy()
      })
  }
}
