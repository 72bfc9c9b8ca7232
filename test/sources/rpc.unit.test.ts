import { HttpRequestError, InternalRpcError, InvalidParamsRpcError, LimitExceededRpcError, RpcRequestError, TimeoutError } from 'viem'
import { describe, expect, it } from 'vitest'
import { ChainReader } from '../../src/sources/reader.js'
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
    expect(
      isRangeRefusal(
        new InvalidParamsRpcError(providerError(-32602, 'Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range')),
      ),
    ).toBe(true)
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

describe('Multicall3', () => {
  const chain = { name: 'x', rpc_url: 'http://127.0.0.1:9', confirmations: 2, poll_interval_ms: 4000, requests_per_second: 10, max_block_range: 2000 }

  it("comes from viem's chain list when the file does not say, without asking the node", async () => {
    // Nothing listens on port 9: a request would fail the test.
    const mainnet = new ChainReader({ chain: { ...chain, chain_id: 1, multicall3_address: undefined }, retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 } })
    expect(await mainnet.multicallContract()).toEqual({ address: '0xca11bde05977b3631167028862be2a173976ca11', fromBlock: 14_353_601n })
  })

  it('is the configured address, or none when switched off', async () => {
    const configured = new ChainReader({ chain: { ...chain, chain_id: 1, multicall3_address: '0x00000000000000000000000000000000000000c1' } })
    expect(await configured.multicallContract()).toEqual({ address: '0x00000000000000000000000000000000000000c1', fromBlock: 0n })
    const off = new ChainReader({ chain: { ...chain, chain_id: 1, multicall3_address: null } })
    expect(await off.multicallContract()).toBeNull()
  })
})
