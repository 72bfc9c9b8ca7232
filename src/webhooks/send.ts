import http from 'node:http'
import https from 'node:https'
import { Webhook } from 'standardwebhooks'
import { OutboundRefused, resolveTarget, type OutboundPolicy } from './outbound.js'

// One delivery attempt: sign with Standard Webhooks, POST, classify the answer. node:http never
// follows redirects on its own, and we do not either: a 3xx is a failed attempt (a redirect could
// point anywhere, including past the address checks).

export interface SignedMessage {
  /** The event id: `webhook-id`, the same on every attempt so receivers can deduplicate. */
  id: string
  /** The exact JSON text that is signed and sent. */
  body: string
  /** The `whsec_…` secret. */
  secret: string
  /** `webhook-timestamp`. */
  timestamp: Date
}

export interface AttemptResult {
  ok: boolean
  /** The receiver's status; null when no response arrived. */
  statusCode: number | null
  /** Why it failed, for the operator; null on success. */
  error: string | null
  /** The first bytes of the response body (NUL-free, so PostgreSQL can store it). */
  responseBody: string | null
}

export interface SendOptions {
  policy: OutboundPolicy
  /** The whole attempt (DNS, connect, TLS, response headers); 10 s by default. */
  timeoutMs: number
  userAgent?: string
}

const RESPONSE_EXCERPT_BYTES = 1024

export function signatureHeaders(message: SignedMessage): Record<string, string> {
  return {
    'webhook-id': message.id,
    'webhook-timestamp': String(Math.floor(message.timestamp.getTime() / 1000)),
    'webhook-signature': new Webhook(message.secret).sign(message.id, message.timestamp, message.body),
  }
}

export async function sendWebhook(url: string, message: SignedMessage, options: SendOptions): Promise<AttemptResult> {
  const signal = AbortSignal.timeout(options.timeoutMs)
  let target: Awaited<ReturnType<typeof resolveTarget>>
  try {
    target = await abortable(resolveTarget(url, options.policy), signal)
  } catch (e) {
    if (e instanceof OutboundRefused) return failure(null, `refused: ${e.message}`)
    return failure(null, describeError(e, options.timeoutMs))
  }
  const headers = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(message.body)),
    'user-agent': options.userAgent ?? 'vaultgate-webhooks',
    ...signatureHeaders(message),
  }
  const send = target.url.protocol === 'https:' ? https.request : http.request
  return new Promise<AttemptResult>((resolve) => {
    let settled = false
    const settle = (result: AttemptResult) => {
      if (settled) return
      settled = true
      resolve(result)
    }
    // agent: false gives every attempt a fresh connection made through the pinned lookup.
    const req = send(target.url, { method: 'POST', headers, lookup: target.lookup, agent: false, signal })
    req.on('response', (res) => {
      const status = res.statusCode ?? 0
      const chunks: Buffer[] = []
      let size = 0
      const done = () => {
        res.destroy()
        const body = chunks.length ? Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8').replaceAll('\u0000', '') : null
        if (status >= 200 && status < 300) settle({ ok: true, statusCode: status, error: null, responseBody: body })
        else if (status >= 300 && status < 400) settle(failure(status, `redirect (HTTP ${status}) not followed`, body))
        else settle(failure(status, `HTTP ${status}`, body))
      }
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk)
        size += chunk.length
        if (size >= RESPONSE_EXCERPT_BYTES) done()
      })
      res.on('end', done)
      // The status decides the outcome; a body cut short (timeout, reset) changes nothing.
      res.on('error', done)
      res.on('aborted', done)
    })
    req.on('error', (e) => settle(failure(null, describeError(e, options.timeoutMs))))
    req.end(message.body)
  })
}

function failure(statusCode: number | null, error: string, responseBody: string | null = null): AttemptResult {
  return { ok: false, statusCode, error, responseBody }
}

function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    if (signal.aborted) return onAbort()
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

const MESSAGES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'DNS lookup failed (temporary)',
  EPIPE: 'connection closed while sending',
}

/** A short sentence for the attempt log; never the URL (its query may carry the receiver's token). */
function describeError(e: unknown, timeoutMs: number): string {
  const err = e as NodeJS.ErrnoException & { cause?: unknown }
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError' || (err?.cause as Error | undefined)?.name === 'TimeoutError') {
    return `no response within ${timeoutMs / 1000} s`
  }
  const code = typeof err?.code === 'string' ? err.code : undefined
  if (code && MESSAGES[code]) return MESSAGES[code]
  if (code && /CERT|TLS|SSL|SELF_SIGNED|ALTNAME/.test(code)) return `TLS: ${code}`
  const message = err instanceof Error ? err.message : String(e)
  return (code ? `${code}: ${message}` : message).slice(0, 300)
}
