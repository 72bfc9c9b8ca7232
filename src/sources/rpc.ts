import { BaseError, HttpRequestError, RpcRequestError, TimeoutError, type EIP1193RequestFn, type Transport } from 'viem'

// The layers around every JSON-RPC request of the chain source: a per-chain request budget, and
// retries with exponential backoff and full jitter. viem's own retries are switched off (the base
// transport is built with retryCount 0) so these are the only ones, and every failed attempt is
// reported instead of thrown away.

export interface RpcRequest {
  method: string
  params?: unknown
}

/** Runs around one request: `next` sends it on to the inner transport. */
export type RequestLayer = (request: RpcRequest, next: (request: RpcRequest) => Promise<unknown>) => Promise<unknown>

/** A transport whose every request passes through `layer` before reaching `inner`. */
export function wrapTransport(inner: Transport, layer: RequestLayer): Transport {
  return (options) => {
    const base = inner(options)
    const request = ((args: RpcRequest, requestOptions?: unknown) =>
      layer(args, (a) => (base.request as (a: RpcRequest, o?: unknown) => Promise<unknown>)(a, requestOptions))) as EIP1193RequestFn
    return { ...base, request }
  }
}

export type Sleep = (ms: number) => Promise<void>
export const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A token bucket: `perSecond` requests per second on average, bursts of at most `perSecond`.
 * Waiters are served in arrival order.
 */
export class RequestBudget {
  private tokens: number
  private last: number
  private queue: Promise<void> = Promise.resolve()

  constructor(
    readonly perSecond: number,
    private readonly now: () => number = () => performance.now(),
    private readonly sleep: Sleep = realSleep,
  ) {
    if (!(perSecond > 0)) throw new RangeError('perSecond must be positive')
    this.tokens = perSecond
    this.last = now()
  }

  /** Resolves when one request may be sent. */
  take(): Promise<void> {
    const turn = this.queue.then(() => this.takeNow())
    this.queue = turn
    return turn
  }

  private async takeNow(): Promise<void> {
    for (;;) {
      const t = this.now()
      this.tokens = Math.min(this.perSecond, this.tokens + ((t - this.last) / 1000) * this.perSecond)
      this.last = t
      if (this.tokens >= 1) {
        this.tokens -= 1
        return
      }
      await this.sleep(Math.ceil(((1 - this.tokens) / this.perSecond) * 1000))
    }
  }
}

export interface RetryPolicy {
  /** Attempts per request, the first included. */
  attempts: number
  baseDelayMs: number
  maxDelayMs: number
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 250, maxDelayMs: 30_000 }

/** One failed attempt, as reported to the source's error hook (and from there to logs and status). */
export interface RpcFailure {
  method: string
  attempt: number
  willRetry: boolean
  /** One line, without URLs (an RPC URL often carries an API key). */
  message: string
  /** The call reverted: the contract's answer, not a failure of the node (probes of optional interfaces do). */
  reverted?: true
}

function walk(error: unknown, match: (e: unknown) => boolean): unknown {
  if (error instanceof BaseError) return error.walk(match) ?? undefined
  let e: unknown = error
  for (let i = 0; e && i < 10; i++, e = (e as { cause?: unknown }).cause) if (match(e)) return e
  return undefined
}

const codeOf = (error: unknown): number | undefined => {
  const found = walk(error, (e) => typeof (e as { code?: unknown })?.code === 'number') as { code: number } | undefined
  return found?.code
}

const textOf = (error: unknown): string => {
  const parts: string[] = []
  walk(error, (e) => {
    if (e instanceof BaseError) parts.push(e.shortMessage, e.details)
    else if (e instanceof Error) parts.push(e.message)
    return false
  })
  return parts.join(' ')
}

// Providers word the refusal of a large eth_getLogs range differently: "query returned more than
// 10000 results", "block range is too wide", "exceed maximum block range: 5000", "Log response size
// exceeded", "eth_getLogs is limited to a 10,000 range", …
const RANGE_REFUSAL = /range|limit|too (many|large|wide|big)|more than \d+ (results|logs)|response size|exceed/i
// …but a rate limit ("10/second request limit reached", HTTP 429) calls for waiting, not halving.
const RATE_LIMITED = /rate|per second|\/second|too many requests|request limit/i

/** Whether a failed eth_getLogs asked for too much at once (so a smaller range may succeed). */
export function isRangeRefusal(error: unknown): boolean {
  if (walk(error, (e) => e instanceof TimeoutError)) return true
  const status = (walk(error, (e) => e instanceof HttpRequestError) as HttpRequestError | undefined)?.status
  if (status === 413) return true
  const code = codeOf(error)
  const text = textOf(error)
  if (status === 429 || code === 429 || code === -32007 || RATE_LIMITED.test(text)) return false
  return RANGE_REFUSAL.test(text)
}

const REVERTED = /execution reverted|revert/i

/** Failures a retry cannot cure: the same request gets the same answer. */
function isDeterministic(error: unknown, method: string): boolean {
  if (walk(error, (e) => e instanceof Error && e.name === 'AbortError')) return true
  const code = codeOf(error)
  // -32601 method not found, -32004 method not supported, -32602 invalid params, 3 reverted.
  if (code === -32601 || code === -32004 || code === -32602 || code === 3) return true
  if (REVERTED.test(textOf(error))) return true
  return method === 'eth_getLogs' && isRangeRefusal(error)
}

/** The wait the server asked for with Retry-After, in ms. */
function retryAfterMs(error: unknown): number | undefined {
  const http = walk(error, (e) => e instanceof HttpRequestError || e instanceof RpcRequestError) as { headers?: Headers } | undefined
  const value = http?.headers?.get?.('Retry-After')
  if (!value) return undefined
  const seconds = Number.parseInt(value, 10)
  if (!Number.isNaN(seconds)) return seconds * 1000
  const at = Date.parse(value) - Date.now()
  return at > 0 ? at : undefined
}

const URL_PATTERN = /\b(?:https?|wss?):\/\/[^\s"'<>]+/gi

/** A one-line description of an RPC failure that never contains a URL. */
export function describeRpcError(error: unknown): string {
  let text: string
  if (error instanceof BaseError) {
    // viem's outermost error names the kind (its class follows the JSON-RPC code); details carry the node's words.
    text = [error.shortMessage, error.details && error.details !== error.shortMessage ? error.details : ''].filter(Boolean).join(': ')
    const http = error.walk((e) => e instanceof HttpRequestError) as HttpRequestError | null
    if (http?.status) text = `HTTP ${http.status}: ${text}`
  } else text = error instanceof Error ? error.message : String(error)
  const code = codeOf(error)
  if (code !== undefined && !text.includes(String(code))) text = `${text} (code ${code})`
  return text.replace(URL_PATTERN, '[url]').replace(/\s+/g, ' ').trim().slice(0, 500)
}

export interface RpcLayerOptions {
  requestsPerSecond: number
  retry?: RetryPolicy
  onFailure?: (failure: RpcFailure) => void
  /** Injected in tests: the jitter source (0 ≤ x < 1), the sleep, the clock of the budget. */
  random?: () => number
  sleep?: Sleep
  now?: () => number
}

/**
 * The budget and retry layer. Each attempt takes a token from the budget; a failure that a retry
 * may cure waits `random() × min(maxDelay, base × 2^attempt)` (full jitter: clients that failed
 * together do not retry together), or what Retry-After asked for, then tries again.
 */
export function rpcLayer(options: RpcLayerOptions): RequestLayer {
  const retry = options.retry ?? DEFAULT_RETRY
  const budget = new RequestBudget(options.requestsPerSecond, options.now, options.sleep)
  const sleep = options.sleep ?? realSleep
  const random = options.random ?? Math.random
  return async (request, next) => {
    for (let attempt = 1; ; attempt++) {
      await budget.take()
      try {
        return await next(request)
      } catch (error) {
        const willRetry = attempt < retry.attempts && !isDeterministic(error, request.method)
        const reverted = codeOf(error) === 3 || REVERTED.test(textOf(error))
        options.onFailure?.({ method: request.method, attempt, willRetry, message: describeRpcError(error), ...(reverted ? { reverted: true as const } : {}) })
        if (!willRetry) throw error
        const backoff = random() * Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1))
        await sleep(Math.min(retry.maxDelayMs, Math.max(backoff, retryAfterMs(error) ?? 0)))
      }
    }
  }
}
