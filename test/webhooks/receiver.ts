import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

// A real webhook receiver for the tests: a node:http server that verifies every request with the
// standardwebhooks package's own Webhook.verify (the integrator's side), records what it got, and
// counts requests in flight per path, so overlapping deliveries to one endpoint are seen.

export interface Received {
  path: string
  host: string | undefined
  id: string | undefined
  timestamp: string | undefined
  signature: string | undefined
  body: string
  /** Webhook.verify accepted it with the path's secret. */
  verified: boolean
  /** What verify returned (the parsed body) or why it refused. */
  verifyResult: unknown
  /** Requests to this path in flight when this one arrived, itself included. */
  inFlight: number
}

export interface Reply {
  status: number
  headers?: Record<string, string>
  body?: string
  /** Hold the answer this long (ms). */
  delayMs?: number
  /** Never answer (the client's timeout ends it). */
  hang?: boolean
}

export type Responder = (request: Received, nthForPath: number) => Reply

export interface Receiver {
  url: (path: string) => string
  port: number
  requests: Received[]
  /** Per path: the most requests ever in flight at once. */
  maxInFlight: Map<string, number>
  /** The most requests in flight at once over all paths. */
  maxInFlightOverall: () => number
  secrets: Map<string, string>
  respond: Responder
  close(): Promise<void>
}

export async function startReceiver(respond: Responder = () => ({ status: 204 })): Promise<Receiver> {
  const requests: Received[] = []
  const maxInFlight = new Map<string, number>()
  const inFlight = new Map<string, number>()
  const counts = new Map<string, number>()
  let overall = 0
  let maxOverall = 0
  const hanging = new Set<http.ServerResponse>()
  const receiver: Receiver = {
    url: (path) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    port: 0,
    requests,
    maxInFlight,
    maxInFlightOverall: () => maxOverall,
    secrets: new Map(),
    respond,
    close: async () => {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/'
    const now = (inFlight.get(path) ?? 0) + 1
    inFlight.set(path, now)
    maxInFlight.set(path, Math.max(maxInFlight.get(path) ?? 0, now))
    overall++
    maxOverall = Math.max(maxOverall, overall)
    let done = false
    const leave = () => {
      if (done) return
      done = true
      inFlight.set(path, (inFlight.get(path) ?? 1) - 1)
      overall--
    }
    res.on('close', leave)
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const header = (name: string) => req.headers[name] as string | undefined
      let verified = false
      let verifyResult: unknown
      const secret = receiver.secrets.get(path)
      try {
        if (!secret) throw new Error('no secret registered for this path')
        verifyResult = new Webhook(secret).verify(body, {
          'webhook-id': header('webhook-id') ?? '',
          'webhook-timestamp': header('webhook-timestamp') ?? '',
          'webhook-signature': header('webhook-signature') ?? '',
        })
        verified = true
      } catch (e) {
        verifyResult = (e as Error).message
      }
      const received: Received = {
        path,
        host: req.headers.host,
        id: header('webhook-id'),
        timestamp: header('webhook-timestamp'),
        signature: header('webhook-signature'),
        body,
        verified,
        verifyResult,
        inFlight: now,
      }
      requests.push(received)
      const n = (counts.get(path) ?? 0) + 1
      counts.set(path, n)
      const reply = receiver.respond(received, n)
      if (reply.hang) {
        hanging.add(res)
        return
      }
      const send = () => {
        res.writeHead(reply.status, reply.headers)
        res.end(reply.body)
      }
      if (reply.delayMs) setTimeout(send, reply.delayMs)
      else send()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.port = (server.address() as AddressInfo).port
  return receiver
}

/** Polls until `check` holds or `ms` pass; returns whether it held. */
export async function within(ms: number, check: () => boolean | Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms
  for (;;) {
    if (await check()) return true
    if (Date.now() > deadline) return false
    await new Promise((r) => setTimeout(r, 10))
  }
}
