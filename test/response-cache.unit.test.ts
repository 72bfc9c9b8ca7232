import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { requestDeadline, requestSignal, withOwnDeadline } from '../src/http/limits.js'
import { isPublicOperation, pathAndQuery, PUBLIC_QUERY_FIELDS, PUBLIC_TYPES, ResponseCache } from '../src/http/response-cache.js'
import { schema } from '../src/schema/index.js'

const answer = (body: string) => ({ body, contentType: 'application/json' })

describe('ResponseCache', () => {
  it('serves an entry until its TTL passes', () => {
    let now = 1000
    const cache = new ResponseCache(5000, 1 << 20, () => now)
    cache.set('k', answer('a'), cache.ticket())
    now = 5999
    expect(cache.get('k')?.body).toBe('a')
    now = 6000
    expect(cache.get('k')).toBeUndefined()
  })

  it('drops a response computed before a clear (an import raced the read)', () => {
    const cache = new ResponseCache(5000, 1 << 20)
    const ticket = cache.ticket()
    cache.clear()
    cache.set('k', answer('old'), ticket)
    expect(cache.get('k')).toBeUndefined()
    cache.set('k', answer('new'), cache.ticket())
    expect(cache.get('k')?.body).toBe('new')
  })

  it('holds nothing while the change feed is down, and forgets what it had', () => {
    const cache = new ResponseCache(5000, 1 << 20)
    cache.set('k', answer('a'), cache.ticket())
    cache.setLive(false)
    expect(cache.enabled).toBe(false)
    expect(cache.get('k')).toBeUndefined()
    cache.set('k', answer('a'), cache.ticket())
    cache.setLive(true)
    expect(cache.get('k')).toBeUndefined()
  })

  it('is off with a TTL of 0', () => {
    const cache = new ResponseCache(0, 1 << 20)
    cache.set('k', answer('a'), cache.ticket())
    expect(cache.get('k')).toBeUndefined()
  })

  it('evicts the oldest entries beyond its byte budget, and never stores one answer larger than 1/16 of it', () => {
    const cache = new ResponseCache(5000, 1600)
    for (const k of ['k1', 'k2', 'k3', 'k4', 'k5', 'k6']) cache.set(k, answer('x'.repeat(98)), cache.ticket())
    expect(['k1', 'k2', 'k3', 'k4', 'k5', 'k6'].map((k) => cache.get(k) !== undefined)).toEqual([true, true, true, true, true, true])
    const big = new ResponseCache(5000, 16 * 100)
    big.set('k', answer('x'.repeat(100)), big.ticket())
    expect(big.get('k')).toBeUndefined()
    const small = new ResponseCache(5000, 250)
    small.set('a', answer('x'.repeat(10)), small.ticket())
    small.set('b', answer('x'.repeat(10)), small.ticket())
    for (let i = 0; i < 30; i++) small.set(`c${i}`, answer('x'.repeat(5)), small.ticket())
    expect(small.get('a')).toBeUndefined()
    expect(small.get('c29')?.body).toBe('xxxxx')
  })

  it('computes a missing answer once for concurrent requests, and shares no failure', async () => {
    const cache = new ResponseCache(5000, 1 << 20)
    let calls = 0
    let release: (v: { body: string; contentType: string }) => void = () => {}
    const produce = () => {
      calls++
      return new Promise<{ body: string; contentType: string }>((resolve) => (release = resolve))
    }
    const loads = [cache.load('k', produce), cache.load('k', produce), cache.load('k', produce)]
    release(answer('once'))
    expect((await Promise.all(loads)).map((r) => r?.body)).toEqual(['once', 'once', 'once'])
    expect(calls).toBe(1)

    let fail: (e: Error) => void = () => {}
    const failing = cache.load('f', () => new Promise((_, reject) => (fail = reject)))
    const waiting = cache.load('f', produce)
    fail(new Error('boom'))
    await expect(failing).rejects.toThrow('boom')
    expect(await waiting).toBeUndefined()
  })

  it('lets no request started after a clear join a computation started before it', async () => {
    const cache = new ResponseCache(5000, 1 << 20)
    let releaseOld: (v: { body: string; contentType: string }) => void = () => {}
    const old = cache.load('k', () => new Promise((resolve) => (releaseOld = resolve)))
    cache.clear()
    const fresh = cache.load('k', async () => answer('new'))
    releaseOld(answer('old'))
    expect((await old)?.body).toBe('old')
    expect((await fresh)?.body).toBe('new')
    expect(cache.get('k')?.body).toBe('new')
  })

  it('keys a request by path and query string only', () => {
    expect(pathAndQuery('http://example.test:4000/v1/vaults/a?group_by=asset')).toBe('/v1/vaults/a?group_by=asset')
    expect(pathAndQuery('http://example.test')).toBe('/')
  })
})

describe('withOwnDeadline (a background refresh outliving the request that started it)', () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

  /** An app whose requests have a 100 ms deadline; GET / starts `work` on a detached copy and answers at once. */
  const appStarting = (work: (detached: Request) => Promise<unknown>) => {
    const app = new Hono()
    let started: Promise<unknown> = Promise.resolve()
    app.use('*', requestDeadline(100))
    app.get('/', (c) => {
      const detached = new Request(c.req.url, { headers: c.req.raw.headers })
      started = withOwnDeadline(c.req.raw, detached, () => work(detached))
      return c.text('ok')
    })
    return { app, started: () => started }
  }

  it('gives the copy a deadline of its own: neither the end of the request nor its client aborts it, its own deadline does', async () => {
    const { app, started } = appStarting(async (detached) => {
      await sleep(30) // the request has been answered, its timer cleared
      const signal = requestSignal(detached)
      expect(signal.aborted).toBe(false)
      await new Promise((resolve) => signal.addEventListener('abort', resolve))
      return signal.reason
    })
    const client = new AbortController()
    const t0 = Date.now()
    expect((await app.request('/', { signal: client.signal })).status).toBe(200)
    client.abort()
    const reason = (await started()) as Error
    expect(reason.message).toMatch(/longer than 100 ms/)
    expect(Date.now() - t0).toBeGreaterThanOrEqual(95)
  })

  it('clears its timer when the work settles', async () => {
    let signal: AbortSignal | undefined
    const { app, started } = appStarting(async (detached) => {
      signal = requestSignal(detached)
    })
    await app.request('/')
    await started()
    await sleep(150)
    expect(signal?.aborted).toBe(false)
  })
})

describe('isPublicOperation', () => {
  const check = (query: string, operationName?: string) => isPublicOperation(schema, query, operationName)

  it('accepts queries of vaults and their compositions, with fragments, aliases and __typename', () => {
    expect(check('{ vault(id: "a") { id tvl composition { asOf positions { platform pct } } } }')).toBe(true)
    expect(check('query Q { a: vaults(first: 2) { edges { node { ...V } } pageInfo { hasNextPage } } } fragment V on Vault { id __typename ... on Vault { name } }')).toBe(true)
    expect(check('query A { vault(id: "a") { id } } query B { __schema { types { name } } }', 'A')).toBe(true)
  })

  it('refuses introspection, unknown fields, invalid documents, mutations and ambiguous operations', () => {
    expect(check('{ __schema { types { name } } }')).toBe(false)
    expect(check('{ vault(id: "a") { id __type(name: "Vault") { name } } }')).toBe(false)
    expect(check('{ vault(id: "a") { nope } }')).toBe(false)
    expect(check('{ vault(id: "a") { id ')).toBe(false)
    expect(check('mutation { vault(id: "a") { id } }')).toBe(false)
    expect(check('query A { vault(id: "a") { id } } query B { vault(id: "b") { id } }')).toBe(false)
    expect(check('{ vault(id: "a") { ...F } }')).toBe(false)
  })

  it('covers exactly these fields: a field added to a public type must be public too (review it, then add it here)', () => {
    const fields = Object.fromEntries(
      [...PUBLIC_TYPES].sort().map((name) => {
        const type = schema.getType(name) as { getFields(): Record<string, unknown> }
        return [name, Object.keys(type.getFields()).sort()]
      }),
    )
    expect(fields).toEqual({
      Composition: ['asOf', 'positions'],
      CompositionPoint: ['t', 'weightsPct'],
      CompositionPosition: ['apyEstPct', 'asset', 'icon', 'pct', 'platform', 'symbol'],
      CompositionSeries: ['groupBy', 'labels', 'points', 'timeframe'],
      Contract: ['address'],
      DepositConstraints: ['maxDeposit', 'minDeposit', 'paused'],
      Icons: ['dark', 'light'],
      PageInfo: ['endCursor', 'hasNextPage', 'hasPreviousPage', 'startCursor'],
      Vault: [
        'apiEndpoint', 'baseAsset', 'chain', 'chainId', 'composition', 'compositionSeries', 'contract', 'depositConstraints', 'description', 'docsUrl', 'icons', 'id',
        'inceptionDate', 'mgmtFeeBps', 'name', 'perfFeeBps', 'sharePrice', 'status', 'strategyBrief', 'symbol', 'tvl', 'withdrawConstraints',
      ],
      VaultConnection: ['edges', 'pageInfo'],
      VaultEdge: ['cursor', 'node'],
      WithdrawConstraints: ['instantLiquidity', 'instantSlippageMaxBps', 'redeem24hThresholdPctOfAum', 'redeem48hAboveThreshold'],
    })
    expect([...PUBLIC_QUERY_FIELDS].sort()).toEqual(['vault', 'vaults'])
  })
})
