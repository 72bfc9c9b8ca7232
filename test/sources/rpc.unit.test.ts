import { HttpRequestError, InternalRpcError, InvalidParamsRpcError, LimitExceededRpcError, RpcRequestError, TimeoutError } from 'viem'
import { describe, expect, it } from 'vitest'
import { describeRpcError, isRangeRefusal, RequestBudget } from '../../src/sources/rpc.js'

const URL_WITH_KEY = 'https://eth-mainnet.example/v2/SECRET-KEY'
/** A JSON-RPC error as viem's http transport hands it on (the provider's error wrapped by code). */
const providerError = (code: number, message: string) => new RpcRequestError({ body: { method: 'eth_getLogs' }, error: { code, message }, url: URL_WITH_KEY })

describe('request budget', () => {
  it('lets a burst of one second through, then one request each 1/rate seconds, in arrival order', async () => {
    let now = 0
    const budget = new RequestBudget(
      5,
      () => now,
      async (ms) => {
        now += ms
      },
    )
    const released: [number, number][] = []
    await Promise.all(Array.from({ length: 9 }, (_, i) => budget.take().then(() => released.push([i, now]))))
    expect(released).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [3, 0],
      [4, 0],
      [5, 200],
      [6, 400],
      [7, 600],
      [8, 800],
    ])
    // Idle time refills the bucket, up to one second's worth.
    now += 10_000
    const t = now
    for (let i = 0; i < 6; i++) await budget.take()
    expect(now - t).toBe(200)
  })

  it('refuses a budget that could never send', () => {
    expect(() => new RequestBudget(0)).toThrow('perSecond must be positive')
  })
})

describe('RPC errors', () => {
  it('tells a refused eth_getLogs range from failures that call for waiting', () => {
    // Refusals in providers' words (Infura, Alchemy, QuickNode, geth, Cloudflare)
    expect(isRangeRefusal(new LimitExceededRpcError(providerError(-32005, 'query returned more than 10000 results')))).toBe(true)
    expect(isRangeRefusal(new InvalidParamsRpcError(providerError(-32602, 'Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range')))).toBe(true)
    expect(isRangeRefusal(providerError(-32614, 'eth_getLogs is limited to a 10,000 range'))).toBe(true)
    expect(isRangeRefusal(providerError(-32000, 'exceed maximum block range: 5000'))).toBe(true)
    expect(isRangeRefusal(providerError(-32047, 'Exceeded max range limit for eth_getLogs: 800'))).toBe(true)
    expect(isRangeRefusal(new TimeoutError({ body: {}, url: URL_WITH_KEY }))).toBe(true)
    expect(isRangeRefusal(new HttpRequestError({ url: URL_WITH_KEY, status: 413 }))).toBe(true)
    // Rate limits and outages: wait and retry, do not halve
    expect(isRangeRefusal(new HttpRequestError({ url: URL_WITH_KEY, status: 429, details: 'Too Many Requests' }))).toBe(false)
    expect(isRangeRefusal(providerError(-32007, '10/second request limit reached - reduce calls per second'))).toBe(false)
    expect(isRangeRefusal(new LimitExceededRpcError(providerError(-32005, 'daily request count exceeded, request rate limited')))).toBe(false)
    expect(isRangeRefusal(new InternalRpcError(providerError(-32603, 'internal error')))).toBe(false)
    expect(isRangeRefusal(new HttpRequestError({ url: URL_WITH_KEY, status: 502 }))).toBe(false)
  })

  it('describes a failure in one line without the URL (it may carry an API key)', () => {
    const http = new HttpRequestError({ url: URL_WITH_KEY, status: 401, body: { method: 'eth_blockNumber' }, details: `invalid key for ${URL_WITH_KEY}` })
    expect(describeRpcError(http)).toBe('HTTP 401: HTTP request failed.: invalid key for [url]')
    expect(describeRpcError(new LimitExceededRpcError(providerError(-32005, 'query returned more than 10000 results')))).toBe(
      'Request exceeds defined limit.: query returned more than 10000 results (code -32005)',
    )
    expect(describeRpcError(new Error(`connect ECONNREFUSED at ${URL_WITH_KEY}\n  more`))).toBe('connect ECONNREFUSED at [url] more')
  })
})
