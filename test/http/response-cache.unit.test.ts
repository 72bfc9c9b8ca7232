import { describe, expect, it } from 'vitest'
import { Deadline, underDeadline } from '../../src/core/deadlines.js'
import { ResponseCache, type CachedResponse } from '../../src/http/response-cache.js'
import { buildSchema } from 'graphql'
import { isPublicOperation, operationClassifier, schemaClasses } from '../../src/graphql/public-operations.js'
import { schema } from '../../src/graphql/schema/index.js'

const answer = (body: string) => ({ body, contentType: 'application/json' })

/** A promise settled from outside. */
function deferred<T>() {
  let resolve: (value: T) => void = () => {}
  let reject: (error: unknown) => void = () => {}
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Lets every pending promise callback run (a background refresh settles). */
const settle = () => new Promise((resolve) => setImmediate(resolve))

/** Whether `promise` has settled (after the microtasks queued so far have run). */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false
  promise.then(
    () => (settled = true),
    () => (settled = true),
  )
  await settle()
  return settled
}

/**
 * A produce function that records its calls (and whether each ran in the background) and answers
 * each with a promise the test settles.
 */
function producer() {
  const calls: { background: boolean; result: ReturnType<typeof deferred<CachedResponse | undefined>> }[] = []
  const produce = (background: boolean) => {
    const result = deferred<CachedResponse | undefined>()
    calls.push({ background, result })
    return result.promise
  }
  return { calls, produce }
}

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

  describe('stale-while-revalidate (TTL 5 s, stale window 5 s)', () => {
    /** A cache holding `k` = 'old', stored at t = 1000: fresh until 6000, stale until 11000. */
    const staleSetup = () => {
      const clock = { now: 1000 }
      const cache = new ResponseCache(5000, 1 << 20, () => clock.now, 5000)
      cache.set('k', answer('old'), cache.ticket())
      return { clock, cache }
    }

    it('answers an expired entry within its window at once, refreshing it with one background produce for N concurrent loads', async () => {
      const { clock, cache } = staleSetup()
      clock.now = 6000
      const { calls, produce } = producer()
      const loads = Array.from({ length: 20 }, () => cache.load('k', produce))
      // All answered before the refresh finishes.
      expect((await Promise.all(loads)).map((r) => r?.body)).toEqual(Array(20).fill('old'))
      expect(calls.map((c) => c.background)).toEqual([true])
      // Still stale (the refresh runs): later loads answer it too and start no second refresh.
      clock.now = 10_999
      expect((await cache.load('k', produce))?.body).toBe('old')
      expect(calls.length).toBe(1)
    })

    it('never answers a stale entry from get(), which also keeps it for load', async () => {
      const { clock, cache } = staleSetup()
      clock.now = 5999
      expect(cache.get('k')?.body).toBe('old')
      clock.now = 6000
      expect(cache.get('k')).toBeUndefined()
      expect(cache.size).toBe(1)
      const { calls, produce } = producer()
      expect((await cache.load('k', produce))?.body).toBe('old')
      expect(calls.length).toBe(1)
    })

    it('answers the fresh value once the refresh resolves, for a full TTL from then', async () => {
      const { clock, cache } = staleSetup()
      clock.now = 7000
      const { calls, produce } = producer()
      expect((await cache.load('k', produce))?.body).toBe('old')
      clock.now = 7500
      calls[0]!.result.resolve(answer('new'))
      await settle()
      expect(cache.get('k')?.body).toBe('new')
      expect((await cache.load('k', produce))?.body).toBe('new')
      clock.now = 12_499
      expect(cache.get('k')?.body).toBe('new')
      clock.now = 12_500
      expect(cache.get('k')).toBeUndefined()
      expect(calls.length).toBe(1)
    })

    it('a load past the window joins a refresh still running instead of starting another', async () => {
      const { clock, cache } = staleSetup()
      clock.now = 10_000
      const { calls, produce } = producer()
      expect((await cache.load('k', produce))?.body).toBe('old')
      clock.now = 11_000
      const late = cache.load('k', produce)
      expect(await isSettled(late)).toBe(false)
      expect(cache.size).toBe(0)
      calls[0]!.result.resolve(answer('new'))
      expect((await late)?.body).toBe('new')
      expect(calls.length).toBe(1)
      expect(cache.get('k')?.body).toBe('new')
    })

    it('waits for produce once the window has passed (nothing older than TTL + window is answered)', async () => {
      const { clock, cache } = staleSetup()
      clock.now = 11_000
      const { calls, produce } = producer()
      const load = cache.load('k', produce)
      expect(await isSettled(load)).toBe(false)
      expect(calls.map((c) => c.background)).toEqual([false])
      calls[0]!.result.resolve(answer('new'))
      expect((await load)?.body).toBe('new')
      expect(cache.get('k')?.body).toBe('new')
    })

    it('answers nothing stale after a clear (an import), and does not store a refresh that spans one', async () => {
      const { clock, cache } = staleSetup()
      clock.now = 6000
      const { calls, produce } = producer()
      expect((await cache.load('k', produce))?.body).toBe('old')
      cache.clear()
      // The next load computes (in the foreground) rather than answer the dropped entry or join the old refresh.
      const load = cache.load('k', produce)
      expect(await isSettled(load)).toBe(false)
      expect(calls.map((c) => c.background)).toEqual([true, false])
      calls[0]!.result.resolve(answer('before import'))
      await settle()
      expect(cache.get('k')).toBeUndefined()
      calls[1]!.result.resolve(answer('after import'))
      expect((await load)?.body).toBe('after import')
      expect(cache.get('k')?.body).toBe('after import')
    })

    it('answers nothing stale while the change feed is down, nor after it comes back', async () => {
      const { clock, cache } = staleSetup()
      clock.now = 6000
      cache.setLive(false)
      const { calls, produce } = producer()
      const down = cache.load('k', produce)
      expect(calls.map((c) => c.background)).toEqual([false])
      calls[0]!.result.resolve(answer('computed'))
      expect((await down)?.body).toBe('computed')
      cache.setLive(true)
      const up = cache.load('k', produce)
      expect(await isSettled(up)).toBe(false)
      expect(calls.map((c) => c.background)).toEqual([false, false])
      calls[1]!.result.resolve(answer('fresh'))
      expect((await up)?.body).toBe('fresh')
    })

    it('survives a failed or unstorable refresh: no unhandled rejection, the stale entry stays until its window ends and each later load retries', async () => {
      const unhandled: unknown[] = []
      const onUnhandled = (reason: unknown) => unhandled.push(reason)
      process.on('unhandledRejection', onUnhandled)
      try {
        const { clock, cache } = staleSetup()
        clock.now = 6000
        const { calls, produce } = producer()
        expect((await cache.load('k', produce))?.body).toBe('old')
        calls[0]!.result.reject(new Error('database down'))
        await settle()
        expect((await cache.load('k', produce))?.body).toBe('old')
        expect(calls.length).toBe(2)
        calls[1]!.result.resolve(undefined) // not storable (an error answer)
        await settle()
        const throwing = () => {
          throw new Error('thrown synchronously')
        }
        expect((await cache.load('k', throwing))?.body).toBe('old')
        await settle()
        expect(cache.get('k')).toBeUndefined()
        // Past the window: gone, and the next load computes (and waits) as usual.
        clock.now = 11_000
        const load = cache.load('k', produce)
        expect(calls.map((c) => c.background)).toEqual([true, true, false])
        calls[2]!.result.resolve(answer('recovered'))
        expect((await load)?.body).toBe('recovered')
        await settle()
        expect(unhandled).toEqual([])
      } finally {
        process.off('unhandledRejection', onUnhandled)
      }
    })

    it('answers nothing stale with no window (the default)', async () => {
      let now = 1000
      const cache = new ResponseCache(5000, 1 << 20, () => now)
      cache.set('k', answer('old'), cache.ticket())
      now = 6000
      const { calls, produce } = producer()
      const load = cache.load('k', produce)
      expect(calls.map((c) => c.background)).toEqual([false])
      calls[0]!.result.resolve(answer('new'))
      expect((await load)?.body).toBe('new')
    })
  })
})

describe('a detached deadline (a background refresh outliving the request that started it)', () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

  /**
   * A request with a 100 ms deadline (as the pipeline gives one: src/http/pipeline/index.ts admit)
   * that starts `work` on a detached copy and is answered at once (its deadline ended).
   */
  const appStarting = (work: (signal: AbortSignal) => Promise<unknown>) => {
    let started: Promise<unknown> = Promise.resolve()
    const request = async (_path: string, init: { signal?: AbortSignal } = {}) => {
      const deadline = Deadline.in(100, init.signal)
      try {
        started = underDeadline(deadline.detached(), (d) => work(d.signal))
        return { status: 200 }
      } finally {
        deadline.end()
      }
    }
    return { app: { request }, started: () => started }
  }

  it('gives the copy a deadline of its own: neither the end of the request nor its client aborts it, its own deadline does', async () => {
    const { app, started } = appStarting(async (signal) => {
      await sleep(30) // the request has been answered, its timer cleared
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
    const { app, started } = appStarting(async (s) => {
      signal = s
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
    expect(
      check('query Q { a: vaults(first: 2) { edges { node { ...V } } pageInfo { hasNextPage } } } fragment V on Vault { id __typename ... on Vault { name } }'),
    ).toBe(true)
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
      [...schemaClasses(schema).publicTypes].sort().map((name) => {
        const type = schema.getType(name) as { getFields(): Record<string, unknown> }
        return [name, Object.keys(type.getFields()).sort()]
      }),
    )
    expect(fields).toEqual({
      // Decisions §14: the working of an APY, from the vault's snapshots alone.
      ApyBasis: ['from', 'sharePriceFrom', 'sharePriceTo', 'to', 'window'],
      Composition: ['asOf', 'positions'],
      CompositionPoint: ['t', 'weightsPct'],
      CompositionPosition: ['apyEstPct', 'asset', 'icon', 'pct', 'platform', 'symbol'],
      CompositionSeries: ['from', 'groupBy', 'interval', 'labels', 'points', 'timeframe', 'to'],
      Contract: ['address'],
      DepositConstraints: ['maxDeposit', 'minDeposit', 'paused'],
      Icons: ['dark', 'light'],
      PageInfo: ['endCursor', 'hasNextPage', 'hasPreviousPage', 'startCursor'],
      // Performance history (decisions §9): computed from the vault's snapshots alone, the same for every caller.
      PerformancePoint: ['apy7dPct', 'flags', 'sharePrice', 't', 'tvl', 'tvlUsd'],
      PerformanceSeries: ['from', 'interval', 'points', 'timeframe', 'to'],
      Vault: [
        'apiEndpoint',
        'baseAsset',
        'baseAssetPriceUsd',
        'caip10',
        'chain',
        'chainId',
        'composition',
        'compositionSeries',
        'contract',
        'depositConstraints',
        'description',
        'docsUrl',
        'icons',
        'id',
        'inceptionDate',
        'mgmtFeeBps',
        'name',
        'perfFeeBps',
        'performance',
        'performanceSeries',
        'sharePrice',
        'status',
        'strategyBrief',
        'symbol',
        'tvl',
        'tvlUsd',
        'withdrawConstraints',
      ],
      VaultConnection: ['edges', 'pageInfo'],
      VaultEdge: ['cursor', 'node'],
      VaultPerformance: ['apy1d', 'apy1y', 'apy30d', 'apy7d', 'apy90d', 'apyInception', 'asOf', 'basis', 'sharePrice', 'tvl', 'tvlUsd'],
      WithdrawConstraints: ['instantLiquidity', 'instantSlippageMaxBps', 'redeem24hThresholdPctOfAum', 'redeem48hAboveThreshold'],
    })
    expect([...schemaClasses(schema).publicQueryFields].sort()).toEqual(['vault', 'vaultByAddress', 'vaults'])
  })

  it('reads the classes from the marks alone: a type or root field added without one is private', () => {
    const sdl = 'type Query { vault: Vault, other: Vault } type Vault { id: ID, inner: Inner } type Inner { id: ID }'
    const unmarked = buildSchema(sdl)
    expect(schemaClasses(unmarked)).toEqual({ publicTypes: new Set(), publicQueryFields: new Set(), keyManagementFields: new Set() })
    expect(isPublicOperation(unmarked, '{ vault { id } }', undefined)).toBe(false)

    // The marks where Pothos leaves them on the built schema: the `extensions` of types and fields.
    const marked = buildSchema(sdl)
    marked.getType('Vault')!.extensions = { visibility: 'public' }
    marked.getQueryType()!.getFields().vault!.extensions = { visibility: 'public' }
    expect(isPublicOperation(marked, '{ vault { id } }', undefined)).toBe(true)
    expect(isPublicOperation(marked, '{ other { id } }', undefined)).toBe(false)
    expect(isPublicOperation(marked, '{ vault { inner { id } } }', undefined)).toBe(false)
  })
})

describe('key management', () => {
  it('is exactly these root fields, marked in the schema (review a new one, then add it here)', () => {
    expect([...schemaClasses(schema).keyManagementFields].sort()).toEqual([
      'apiKey',
      'apiKeyChanged',
      'apiKeyEvents',
      'apiKeyUsage',
      'createApiKey',
      'revokeApiKey',
    ])
  })

  it('marks an operation selecting one of them, through fragments, whatever else it selects', () => {
    const classOf = operationClassifier(schema)
    expect(classOf('{ vault(id: "a") { id } apiKey { id } }', undefined)).toMatchObject({ keyManagement: true, public: false, read: true })
    expect(classOf('mutation { ...M } fragment M on Mutation { revokeApiKey { revoked } }', undefined)).toMatchObject({ keyManagement: true, read: false })
    expect(classOf('subscription { apiKeyChanged { keyId } }', undefined)).toMatchObject({ keyManagement: true, subscription: true })
    expect(classOf('{ vault(id: "a") { id } }', undefined)).toMatchObject({ keyManagement: false, public: true })
  })
})
