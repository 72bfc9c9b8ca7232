import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AppError } from '../../src/core/errors.js'
import { type Answer, toResponse } from '../../src/http/pipeline/answer.js'
import { fromRequest } from '../../src/http/pipeline/exchange.js'
import { errorAnswer } from '../../src/http/pipeline/finish.js'
import { ResponseCache } from '../../src/http/response-cache.js'
import { z } from 'zod'
import { segmentParam, textParam } from '../../src/rest/params.js'
import { restStep } from '../../src/rest/step.js'
import { defineRoute } from '../../src/rest/route.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'

// The shim's machinery, exercised with a throwaway route over the `vault` query.
const route = defineRoute({
  method: 'GET',
  path: '/probe/:vault_id',
  summary: 'Probe',
  tags: ['Test'],
  errors: ['bad_request', 'not_found'],
  params: { vault_id: segmentParam('A vault id.') },
  query: { fail: textParam('Fails when given.'), echo: textParam('Echoed as `echo`.') },
  document: 'query Probe($id: ID!) { vault(id: $id) { id name tvl } }',
  variables: ({ params, query }) => {
    if (query.fail !== undefined) throw new AppError('bad_request', 'fail was given.')
    return { id: params.vault_id }
  },
  response: z.object({ id: z.string(), name: z.string(), tvl: z.string(), echo: z.string().optional() }),
  shape: (data: { vault: { id: string; name: string; tvl: string } | null }, { query }) => {
    if (!data.vault) throw new AppError('not_found', 'Vault not found.')
    return { id: data.vault.id, name: data.vault.name, tvl: data.vault.tvl, echo: query.echo }
  },
  cache: { scope: 'public', maxAgeSeconds: 5 },
})

describe(`REST shim (${testBackend})`, () => {
  let t: TestApp
  let step: ReturnType<typeof restStep>
  const stepOf = (routes: (typeof route)[]) =>
    restStep({ yoga: t.app.yoga, routes, cache: new ResponseCache(0, 1 << 20), who: t.config, admitted: async () => {} })
  beforeAll(async () => {
    t = await createTestApp()
    await insertVault(t.db.prisma, 'v1', { tvl: '12.50' })
    step = stepOf([route, { ...route, path: '/private/:vault_id', cache: undefined }])
  })
  afterAll(() => t.close())

  /** The step's answer to a request under /v1 (its errors as the pipeline answers them), without the rest of the pipeline. */
  const get = async (path: string, headers: Record<string, string> = {}) => {
    const x = fromRequest(new Request(`http://vaultgate.test/v1${path}`, { headers }))
    let answer: Answer
    try {
      answer = await step.answer(x)!
    } catch (e) {
      answer = errorAnswer(x, e)
    }
    return toResponse(answer)
  }

  it('runs the document and reshapes the result, with an ETag and a short public cache lifetime', async () => {
    const res = await get('/probe/v1')
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('{"id":"v1","name":"Vault v1","tvl":"12.5"}')
    expect(res.headers.get('cache-control')).toBe('public, max-age=5')
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(res.headers.get('etag')).toMatch(/^W\/"[\w-]{27}"$/)
  })

  it('answers If-None-Match with 304 and no body, and a changed resource with 200', async () => {
    const etag = (await get('/probe/v1')).headers.get('etag')!
    const cached = await get('/probe/v1', { 'if-none-match': `"other", ${etag}` })
    expect(cached.status).toBe(304)
    expect(await cached.text()).toBe('')
    await t.db.prisma.vault.update({ where: { id: 'v1' }, data: { tvl: '13' } })
    const fresh = await get('/probe/v1', { 'if-none-match': etag })
    expect(fresh.status).toBe(200)
    expect(fresh.headers.get('etag')).not.toBe(etag)
  })

  it('marks routes without a cache policy no-store', async () => {
    const res = await get('/private/v1')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(res.headers.get('etag')).toBeNull()
  })

  it('turns errors into the standard body', async () => {
    const missing = await get('/probe/nope')
    expect(missing.status).toBe(404)
    expect(await missing.json()).toEqual({ status: 'error', error: { code: 'not_found', message: 'Vault not found.' }, server_time_ms: expect.any(Number) })
    const bad = await get('/probe/v1?fail=1')
    expect(bad.status).toBe(400)
    expect((await bad.json()).error).toEqual({ code: 'bad_request', message: 'fail was given.' })
    const twice = await get('/probe/v1?x=1&x=2')
    expect(twice.status).toBe(400)
    expect((await twice.json()).error).toEqual({ code: 'bad_request', message: 'Query parameter "x" is given more than once.' })
    const empty = await get('/probe/v1?echo=')
    expect(empty.status).toBe(400)
    expect((await empty.json()).error).toEqual({ code: 'bad_request', message: 'echo must not be empty.' })
  })

  it('hands the route its declared query parameters only', async () => {
    expect(await (await get('/probe/v1?echo=hi&other=1')).json()).toEqual({ id: 'v1', name: 'Vault v1', tvl: '13', echo: 'hi' }) // tvl as updated above
  })

  it('refuses to mount a route whose path and declared parameters differ', () => {
    expect(() => stepOf([{ ...route, path: '/probe/:id' }])).toThrow('REST route GET /probe/:id declares path parameters [vault_id]')
  })
})
