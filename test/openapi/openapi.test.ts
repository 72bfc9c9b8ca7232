import { Validator } from '@seriousme/openapi-schema-validator'
import { Ajv2020 } from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp, type App } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { packageVersion } from '../../src/http/routes/reference.js'
import { importDocument } from '../../src/importer/write.js'
import { apiOperations, type openApiDocument } from '../../src/openapi/operations.js'
import { testBackend } from '../support/db.js'
import { EXPLORER_NOW, explorerDocument, fullVault, WALLET } from '../support/explorer-data.js'
import { ADMIN_TOKEN, createKeysTestApp, INTERNAL_TOKEN, type KeysTestApp } from '../support/keys.js'

const OTHER = '0x00000000000000000000000000000000000000b2' // allowlisted, no key
const STRANGER = '0x00000000000000000000000000000000000000c3' // not allowlisted
const LISTED_LATER = '0x00000000000000000000000000000000000000d4'

type Doc = ReturnType<typeof openApiDocument>
interface Operation {
  operationId: string
  responses: Record<string, { content?: Record<string, { schema: unknown }> }>
}

/** The operation a request hits: its method and a path matched against the document's templates. */
function operationFor(doc: Doc, method: string, url: string): Operation {
  const pathname = new URL(url, 'http://x').pathname
  for (const [template, ops] of Object.entries(doc.paths)) {
    const pattern = new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`)
    const op = (ops as Record<string, Operation>)[method.toLowerCase()]
    if (op && pattern.test(pathname)) return op
  }
  throw new Error(`No documented operation for ${method} ${pathname}`)
}

const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const admin = (init: RequestInit, token = ADMIN_TOKEN): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${token}` },
})

describe(`OpenAPI document (${testBackend})`, () => {
  let t: KeysTestApp
  let noAdmin: App
  /** Past its wrong-token budget (one a minute): every admin and internal route answers 429. */
  let locked: App
  let doc: Doc
  const ajv = new Ajv2020({ allErrors: true, strict: true })
  // ajv-formats is CommonJS with a `default` export; this form works under both module systems.
  formats.default(ajv)
  // The document is not a schema; its components are, and response schemas $ref them.
  ajv.addKeyword({ keyword: 'components' })

  beforeAll(async () => {
    // Every wrong-token answer is exercised here: none may become the wrong-token rate limit's 429.
    t = await createKeysTestApp({ clock: () => EXPLORER_NOW, allowlist: [WALLET, OTHER], env: { RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: '0' } })
    await importDocument(explorerDocument, t.db.prisma)
    noAdmin = createApp({ config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }), db: t.db })
    locked = createApp({
      config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', ADMIN_TOKEN, INTERNAL_TOKEN, RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: '1' }),
      db: t.db,
    })
    // Each route family has its own wrong-token budget (docs/hardening.md): lock both.
    for (let i = 0; i < 2; i++) {
      await locked.fetch(new Request('http://vaultgate.test/admin/allowlist', { headers: { authorization: 'Bearer wrong' } }))
      await locked.fetch(new Request('http://vaultgate.test/internal/v1/apiKey/verify', { method: 'POST', headers: { authorization: 'Bearer wrong' } }))
    }
    const res = await t.request('/openapi.json')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
    doc = (await res.json()) as Doc
    ajv.addSchema({ $id: 'https://vaultgate.test/openapi.json', components: doc.components })
  })
  afterAll(async () => {
    await noAdmin.close()
    await locked.close()
    await t.close()
  })

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator()
    const result = await validator.validate(structuredClone(doc) as Parameters<Validator['validate']>[0])
    expect(result.errors).toBeUndefined()
    expect(result.valid).toBe(true)
    expect(validator.version).toBe('3.1')
    expect(doc.info.version).toBe(packageVersion)
  })

  it('matches the committed contract (update with `npx vitest run -u test/openapi/openapi.test.ts` when the API changes on purpose)', async () => {
    await expect(`${JSON.stringify(doc, null, 2)}\n`).toMatchFileSnapshot('__snapshots__/openapi.json')
  })

  it('describes every route the app serves (pages and their assets aside)', () => {
    const pages = /^\/(docs(\/.*)?|explorer\/.*|graphiql\/.*|openapi\.json)?$/
    const documented = new Set(Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${p}`)))
    const served = t.app.routes
      .filter((r) => !pages.test(r.path))
      // GET /graphql is GraphiQL in a browser (and POST's twin); OPTIONS is CORS preflight.
      .filter((r) => !(r.path === '/graphql' && r.method !== 'POST'))
      .map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`)
    expect([...new Set(served)].sort()).toEqual([...documented].sort())
  })

  it('documents each query parameter as its route parses it: every enum value and bound is accepted, and nothing beyond', () => {
    for (const op of apiOperations()) {
      for (const [name, param] of Object.entries(op.query ?? {})) {
        const schema = param.schema as { type: string; enum?: string[]; minimum?: number; maximum?: number; default?: unknown }
        const where = `${op.operationId}.${name}`
        expect(param.parse(undefined, name), where).toEqual(schema.default)
        const rejects = (text: string) => expect(() => param.parse(text, name), `${where}=${text}`).toThrow(expect.objectContaining({ code: 'bad_request' }))
        if (schema.enum) {
          for (const v of schema.enum) expect(param.parse(v, name), where).toBe(v)
          rejects('not-a-value')
        } else if (schema.type === 'integer') {
          expect(param.parse(String(schema.minimum), name)).toBe(schema.minimum)
          expect(param.parse(String(schema.maximum), name)).toBe(schema.maximum)
          rejects(String(schema.minimum! - 1))
          rejects(String(schema.maximum! + 1))
          rejects('abc')
        } else if ((schema as { format?: string }).format === 'date-time') {
          expect(param.parse('2026-11-21T12:00:00+01:00', name), where).toEqual(new Date('2026-11-21T11:00:00.000Z'))
          rejects('x')
          rejects('2026-11-31T00:00:00Z')
        } else {
          expect(schema.type, where).toBe('string')
          expect(param.parse('x', name)).toBe('x')
          if ((schema as { minLength?: number }).minLength === 1) rejects('')
        }
      }
    }
  })

  it('answers every documented status of every route with a body that matches its schema', async () => {
    const etag = (await t.request(`/v1/vaults/${fullVault.id}`)).headers.get('etag')!
    const series = `/v1/vaults/${fullVault.id}/composition/series`
    const cases: { app?: App; path: string; init?: RequestInit; status: number }[] = [
      { path: '/healthz', status: 200 },
      { path: '/readyz', status: 200 },
      { path: '/metrics', status: 200 },
      { path: '/graphql', init: json({ query: '{ vaults(first: 5) { edges { node { id } } } }' }), status: 200 },
      { path: '/graphql', init: json({ query: '{ vault(id: "nope") { id } }' }), status: 200 },
      {
        path: '/graphql',
        init: { ...json({ query: '{ nope }' }), headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' } },
        status: 400,
      },
      { path: '/admin/import', init: admin(json({ vaults: [] })), status: 200 },
      { path: '/admin/import', init: admin(json({ vaults: [{ id: 'x' }] })), status: 400 },
      { path: '/admin/import', init: admin(json({}), 'wrong-token-of-enough-length'), status: 401 },
      // A declared length past the limit is refused before the body is read.
      { path: '/admin/import', init: admin({ ...json({}), headers: { 'content-type': 'application/json', 'content-length': String(2 ** 30) } }), status: 413 },
      { path: '/admin/import', init: admin({ ...json({}), headers: { 'content-type': 'text/plain' } }), status: 415 },
      { app: noAdmin, path: '/admin/import', init: json({}), status: 404 },
      { path: '/v1/vaults', status: 200 },
      { path: '/v1/vaults?limit=1', status: 200 },
      { path: '/v1/vaults?limit=1', init: { headers: { 'if-none-match': 'W/"stale"' } }, status: 200 },
      { path: '/v1/vaults?status=paused&chain=base', status: 200 },
      { path: '/v1/vaults?limit=0', status: 400 },
      { path: `/v1/vaults/${fullVault.id}`, status: 200 },
      { path: '/v1/vaults/beta-eth', status: 200 },
      { path: `/v1/vaults/${fullVault.id}`, init: { headers: { 'if-none-match': etag } }, status: 304 },
      { path: '/v1/vaults/nope', status: 404 },
      { path: `/v1/vaults/${fullVault.id}/composition`, status: 200 },
      { path: `/v1/vaults/${fullVault.id}/composition?group_by=asset`, status: 200 },
      { path: `/v1/vaults/${fullVault.id}/composition?group_by=chain`, status: 400 },
      { path: '/v1/vaults/beta-eth/composition', status: 200 },
      { path: '/v1/vaults/nope/composition', status: 404 },
      { path: series, status: 200 },
      { path: `${series}?timeframe=7d&group_by=asset`, status: 200 },
      { path: '/v1/vaults/beta-eth/composition/series?timeframe=all', status: 200 },
      { path: `${series}?timeframe=2d`, status: 400 },
      { path: '/v1/vaults/nope/composition/series', status: 404 },
      { path: `/v1/vaults/${fullVault.id}/performance`, status: 200 },
      { path: '/v1/vaults/beta-eth/performance', status: 200 },
      { path: '/v1/vaults/nope/performance', status: 404 },
      { path: `/v1/vaults/${fullVault.id}/performance/series`, status: 200 },
      { path: `/v1/vaults/${fullVault.id}/performance/series?timeframe=all`, status: 200 },
      { path: `/v1/vaults/${fullVault.id}/performance/series?timeframe=2d`, status: 400 },
      { path: '/v1/vaults/nope/performance/series', status: 404 },
      { path: `/v1/vaults/${fullVault.id}/performance?at=2026-11-01T00:00:00.000Z`, status: 200 },
      { path: `/v1/vaults/${fullVault.id}/performance?at=yesterday`, status: 400 },
      { path: `/v1/vaults/${fullVault.id}/performance/series?from=2026-10-01T00:00:00.000Z&to=2026-11-01T00:00:00.000Z&interval=1d`, status: 200 },
      { path: `/v1/vaults/${fullVault.id}/performance/series?from=2026-10-01T00:00:00.000Z&timeframe=7d`, status: 400 },
      { path: `${series}?from=2026-10-01T00:00:00.000Z`, status: 200 },
      { path: `${series}?to=2026-10-01T00:00:00.000Z`, status: 400 },
      { path: `/v1/chains/${fullVault.chain_id}/vaults/${fullVault.contract.address.toUpperCase().replace('0X', '0x')}`, status: 200 },
      { path: `/v1/chains/eip155:${fullVault.chain_id}/vaults/${fullVault.contract.address}`, status: 200 },
      {
        path: `/v1/chains/${fullVault.chain_id}/vaults/${fullVault.contract.address}`,
        init: { headers: { 'if-none-match': (await t.request(`/v1/chains/${fullVault.chain_id}/vaults/${fullVault.contract.address}`)).headers.get('etag')! } },
        status: 304,
      },
      { path: `/v1/chains/eip155/vaults/${fullVault.contract.address}`, status: 400 },
      { path: `/v1/chains/${fullVault.chain_id}/vaults/0x123`, status: 400 },
      { path: `/v1/chains/${fullVault.chain_id}/vaults/0x2222222222222222222222222222222222222222`, status: 404 },
      { path: `/v1/users/${WALLET}/vaults/${fullVault.id}/transactions`, status: 200 },
      { path: `/v1/users/${WALLET.toUpperCase().replace('0X', '0x')}/vaults/${fullVault.id}/transactions?type=deposit&limit=1`, status: 200 },
      { path: `/v1/users/${WALLET}/vaults/beta-eth/transactions`, status: 200 },
      { path: `/v1/users/${WALLET}/vaults/${fullVault.id}/transactions?limit=201`, status: 400 },
      { path: `/v1/users/${WALLET}/vaults/nope/transactions`, status: 404 },
      { path: `/v1/users/${WALLET}/transactions`, status: 200 },
      { path: `/v1/users/${WALLET}/transactions?vault_id=${fullVault.id}&type=deposit&limit=1`, status: 200 },
      { path: `/v1/users/${WALLET}/transactions?cursor=abc`, status: 400 },
      { path: `/v1/users/${WALLET}/transactions?vault_id=nope`, status: 404 },
      { path: `/v1/users/${WALLET}/positions?include_closed=true`, status: 200 },
      { path: '/v1/users/0x123/positions', status: 400 },
      { path: `/v1/users/${WALLET}/redeems`, status: 200 },
      { path: '/v1/users/0x0000000000000000000000000000000000000001/redeems', status: 200 },
      { path: '/v1/users/0x123/redeems', status: 400 },
      { path: `/v1/users/${WALLET}/vaults/${fullVault.id}/summary`, status: 200 },
      { path: `/v1/users/0x123/vaults/${fullVault.id}/summary`, status: 400 },
      { path: `/v1/users/${WALLET}/vaults/beta-eth/summary`, status: 404 },
      { path: '/v1/status', status: 200 },
    ]
    // Key management, as the wallet-session holder (spec §7's statuses), then operator and internal routes.
    const session = (wallets: string[], extra: Record<string, string> = {}) => t.session(wallets, extra)
    const key = async (method: string, headers: Record<string, string>, body?: unknown): Promise<RequestInit> => ({
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const two = [WALLET, OTHER]
    for (const method of ['POST', 'GET', 'DELETE']) {
      const body = method === 'POST' ? {} : undefined
      cases.push(
        { path: '/v1/apiKey', init: await key(method, await session([WALLET]), method === 'POST' ? { keyPrefix: 'openapi' } : undefined), status: 200 },
        { path: '/v1/apiKey', init: await key(method, await session([OTHER]), body), status: 200 },
        { path: '/v1/apiKey', init: await key(method, await session(two), body), status: 400 },
        { path: '/v1/apiKey', init: await key(method, await session([WALLET], { 'x-service-wallet': 'nope' }), body), status: 400 },
        { path: '/v1/apiKey', init: await key(method, {}, body), status: 401 },
        { path: '/v1/apiKey', init: await key(method, await session([STRANGER]), body), status: 403 },
        { path: '/v1/apiKey', init: await key(method, await session(two, { 'x-service-wallet': STRANGER }), body), status: 403 },
      )
    }
    cases.push({ path: '/v1/apiKey', init: await key('POST', await session([WALLET]), { keyPrefix: 'not a prefix' }), status: 400 })
    cases.push({
      path: '/v1/apiKey',
      init: await key('POST', await session([WALLET]), { keyPrefix: 'openapi', name: 'desk 1', allowedCidrs: ['203.0.113.7/24', '2001:db8::/32'] }),
      status: 200,
    })
    cases.push({ path: '/v1/apiKey', init: await key('POST', await session([WALLET]), { allowedCidrs: ['10.0.0.0/33'] }), status: 400 })
    // The owner's history and usage: the same statuses as the other key routes.
    for (const path of ['/v1/apiKey/events', '/v1/apiKey/usage']) {
      cases.push(
        { path, init: await key('GET', await session([WALLET])), status: 200 },
        { path: `${path}?${path.endsWith('usage') ? 'days=91' : 'limit=0'}`, init: await key('GET', await session([WALLET])), status: 400 },
        { path, init: await key('GET', await session(two)), status: 400 },
        { path, init: await key('GET', {}), status: 401 },
        { path, init: await key('GET', await session([STRANGER])), status: 403 },
        { path, init: await key('GET', await session(two, { 'x-service-wallet': STRANGER })), status: 403 },
      )
    }
    const created = await t.create(WALLET)
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
    const verify = (apiKey: unknown, token = INTERNAL_TOKEN) => key('POST', bearer(token), { apiKey })
    cases.push(
      { path: '/internal/v1/apiKey/verify', init: await verify(created.body.data.apiKey), status: 200 },
      { path: '/internal/v1/apiKey/verify', init: await verify('vaultgate_unknown'), status: 200 },
      { path: '/internal/v1/apiKey/verify', init: await verify(42), status: 400 },
      { path: '/internal/v1/apiKey/verify', init: await key('POST', bearer(INTERNAL_TOKEN), { apiKey: 'x', clientIp: '10.0.0.256' }), status: 400 },
      { path: '/internal/v1/apiKey/verify', init: await verify('x', 'wrong-token-of-enough-length'), status: 401 },
      { app: noAdmin, path: '/internal/v1/apiKey/verify', init: await verify('x'), status: 404 },
      { path: '/admin/allowlist', init: { headers: bearer(ADMIN_TOKEN) }, status: 200 },
      { path: '/admin/allowlist', init: { headers: bearer('wrong-token-of-enough-length') }, status: 401 },
      { app: noAdmin, path: '/admin/allowlist', status: 404 },
      { path: `/admin/allowlist/${LISTED_LATER}`, init: await key('PUT', bearer(ADMIN_TOKEN), { note: 'contract test' }), status: 200 },
      { path: `/admin/allowlist/${LISTED_LATER}`, init: await key('PUT', bearer(ADMIN_TOKEN)), status: 200 },
      { path: '/admin/allowlist/0x123', init: await key('PUT', bearer(ADMIN_TOKEN)), status: 400 },
      { path: `/admin/allowlist/${LISTED_LATER}`, init: await key('PUT', bearer('wrong-token-of-enough-length')), status: 401 },
      { app: noAdmin, path: `/admin/allowlist/${LISTED_LATER}`, init: { method: 'PUT' }, status: 404 },
      { path: `/admin/allowlist/${LISTED_LATER}`, init: await key('DELETE', bearer(ADMIN_TOKEN)), status: 200 },
      { path: `/admin/allowlist/${LISTED_LATER}`, init: await key('DELETE', bearer(ADMIN_TOKEN)), status: 200 },
      { path: '/admin/allowlist/0x123', init: await key('DELETE', bearer(ADMIN_TOKEN)), status: 400 },
      { path: `/admin/allowlist/${LISTED_LATER}`, init: await key('DELETE', bearer('wrong-token-of-enough-length')), status: 401 },
      { app: noAdmin, path: `/admin/allowlist/${LISTED_LATER}`, init: { method: 'DELETE' }, status: 404 },
    )

    // Webhooks: endpoints made and an import's events written beforehand, so the ids exist.
    const hook = async (event_types: string[]) =>
      (
        (await (
          await t.request('/admin/webhooks', await key('POST', bearer(ADMIN_TOKEN), { url: 'https://hooks.vaultgate.test/in', event_types }))
        ).json()) as { data: { id: string } }
      ).data.id
    const subscribed = await hook(['transaction.created'])
    const vaultsOnly = await hook(['vault.updated'])
    const spare = await hook(['vault.updated'])
    const imported = await t.request('/admin/import', admin(json({ transactions: [{ ...explorerDocument.transactions[0]!, id: 'openapi-webhook' }] })))
    expect(imported.status).toBe(200)
    const [delivery] = (
      (await (await t.request(`/admin/webhooks/${subscribed}/deliveries`, { headers: bearer(ADMIN_TOKEN) })).json()) as {
        data: { items: { id: string; event_id: string }[] }
      }
    ).data.items
    const unknownId = '00000000-0000-4000-8000-000000000000'
    const wrong = bearer('wrong-token-of-enough-length')
    cases.push(
      {
        path: '/admin/webhooks',
        init: await key('POST', bearer(ADMIN_TOKEN), { url: 'https://hooks.vaultgate.test/new', event_types: ['redeem.completed'] }),
        status: 201,
      },
      { path: '/admin/webhooks', init: await key('POST', bearer(ADMIN_TOKEN), { url: 'https://hooks.vaultgate.test/new', event_types: [] }), status: 400 },
      { path: '/admin/webhooks', init: await key('POST', wrong, {}), status: 401 },
      { app: noAdmin, path: '/admin/webhooks', init: await key('POST', {}, {}), status: 404 },
      { path: '/admin/webhooks', init: { headers: bearer(ADMIN_TOKEN) }, status: 200 },
      { path: '/admin/webhooks', init: { headers: wrong }, status: 401 },
      { app: noAdmin, path: '/admin/webhooks', status: 404 },
      { path: `/admin/webhooks/${subscribed}`, init: { headers: bearer(ADMIN_TOKEN) }, status: 200 },
      { path: `/admin/webhooks/${subscribed}`, init: { headers: wrong }, status: 401 },
      { path: `/admin/webhooks/${unknownId}`, init: { headers: bearer(ADMIN_TOKEN) }, status: 404 },
      { path: `/admin/webhooks/${subscribed}/deliveries?limit=1&status=pending`, init: { headers: bearer(ADMIN_TOKEN) }, status: 200 },
      { path: `/admin/webhooks/${subscribed}/deliveries?status=lost`, init: { headers: bearer(ADMIN_TOKEN) }, status: 400 },
      { path: `/admin/webhooks/${subscribed}/deliveries`, init: { headers: wrong }, status: 401 },
      { path: `/admin/webhooks/${unknownId}/deliveries`, init: { headers: bearer(ADMIN_TOKEN) }, status: 404 },
      { path: `/admin/webhooks/${subscribed}/deliveries/${delivery!.id}/replay`, init: await key('POST', bearer(ADMIN_TOKEN)), status: 200 },
      { path: `/admin/webhooks/${subscribed}/deliveries/${delivery!.id}/replay`, init: await key('POST', wrong), status: 401 },
      { path: `/admin/webhooks/${subscribed}/deliveries/${unknownId}/replay`, init: await key('POST', bearer(ADMIN_TOKEN)), status: 404 },
      { path: `/admin/webhooks/events/${delivery!.event_id}/replay`, init: await key('POST', bearer(ADMIN_TOKEN)), status: 200 },
      { path: `/admin/webhooks/events/${delivery!.event_id}/replay?endpoint_id=${vaultsOnly}`, init: await key('POST', bearer(ADMIN_TOKEN)), status: 400 },
      { path: `/admin/webhooks/events/${delivery!.event_id}/replay`, init: await key('POST', wrong), status: 401 },
      { path: `/admin/webhooks/events/${unknownId}/replay`, init: await key('POST', bearer(ADMIN_TOKEN)), status: 404 },
      { path: `/admin/webhooks/${spare}`, init: await key('DELETE', bearer(ADMIN_TOKEN)), status: 200 },
      { path: `/admin/webhooks/${spare}`, init: await key('DELETE', wrong), status: 401 },
      { path: `/admin/webhooks/${spare}`, init: await key('DELETE', bearer(ADMIN_TOKEN)), status: 404 },
    )

    // The wrong-token rate limit: an address past it gets 429 on every admin and internal route for a
    // wrong token (the right one is never refused because of wrong ones: test/core/rate-limit.test.ts).
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops as Record<string, Operation>)) {
        if (!op.responses['429'] || !path.startsWith('/admin') || op.operationId === undefined) continue
        const concrete = path.replace('{address}', LISTED_LATER).replace(/\{\w+\}/g, unknownId)
        const verb = method.toUpperCase()
        cases.push({ app: locked, path: concrete, init: await key(verb, wrong, verb === 'GET' ? undefined : {}), status: 429 })
      }
    }
    cases.push({ app: locked, path: '/internal/v1/apiKey/verify', init: await verify(created.body.data.apiKey, 'wrong-token-of-enough-length'), status: 429 })

    // Conditional requests: a 304 for each cacheable route, with the ETag of its own last answer.
    for (const path of [
      '/v1/vaults',
      `/v1/vaults/${fullVault.id}/composition`,
      series,
      `/v1/vaults/${fullVault.id}/performance`,
      `/v1/vaults/${fullVault.id}/performance/series`,
    ]) {
      cases.push({ path, init: { headers: { 'if-none-match': (await t.request(path)).headers.get('etag')! } }, status: 304 })
    }

    const covered = new Set<string>()
    for (const c of cases) {
      const res = await (c.app ?? t.app).fetch(new Request(`http://vaultgate.test${c.path}`, c.init))
      const where = `${c.init?.method ?? 'GET'} ${c.path}`
      expect(res.status, where).toBe(c.status)
      const op = operationFor(doc, c.init?.method ?? 'GET', c.path)
      const documented = op.responses[String(c.status)]
      expect(documented, `${where}: status ${c.status} is documented`).toBeDefined()
      covered.add(`${op.operationId} ${c.status}`)
      const text = await res.text()
      if (!documented!.content) {
        expect(text, where).toBe('')
        continue
      }
      const contentType = res.headers.get('content-type')?.split(';')[0] ?? ''
      const media = documented!.content[contentType]
      expect(media, `${where}: ${contentType} is documented`).toBeDefined()
      const body = contentType.endsWith('json') ? JSON.parse(text) : text
      const schema = media!.schema as { $ref?: string }
      const valid = ajv.validate(schema.$ref ? { $ref: `https://vaultgate.test/openapi.json${schema.$ref}` } : schema, body)
      expect(ajv.errors ?? [], `${where}: ${text.slice(0, 300)}`).toEqual([])
      expect(valid).toBe(true)
    }

    // 500 and 503 share the error body checked above; every other documented answer was seen.
    const documentedStatuses = Object.values(doc.paths).flatMap((ops) =>
      Object.values(ops as Record<string, Operation>).flatMap((op) =>
        Object.keys(op.responses)
          .filter((s) => s !== '500' && s !== '503')
          .map((s) => `${op.operationId} ${s}`),
      ),
    )
    expect([...covered].sort()).toEqual(documentedStatuses.sort())
  })

  it('rejects a body that drifts from its schema (the check above can fail)', () => {
    const vault = { $ref: 'https://vaultgate.test/openapi.json#/components/schemas/Vault' }
    const ok = { ...fullVault, base_asset_price_usd: undefined }
    delete ok.base_asset_price_usd
    expect(ajv.validate(vault, ok)).toBe(true)
    expect(ajv.validate(vault, { ...ok, tvl: 1250000.5 })).toBe(false)
    expect(ajv.validate(vault, { ...ok, tvl: '1.50' })).toBe(false)
    expect(ajv.validate(vault, { ...ok, extra: 1 })).toBe(false)
    const { strategy_brief: _dropped, ...missing } = ok
    expect(ajv.validate(vault, missing)).toBe(false)
  })

  it('serves the browsable reference from the package, with no request leaving the server', async () => {
    const page = await t.request('/docs')
    expect(page.status).toBe(200)
    const html = await page.text()
    const assets = [...html.matchAll(/<(?:script|link)[^>]* (?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
    expect(assets.filter((a) => !a.startsWith('/'))).toEqual([])
    for (const asset of assets) expect((await t.request(asset)).status, asset).toBe(200)
    expect(assets).toEqual(expect.arrayContaining(['/docs/swagger-ui-bundle.js', '/docs/swagger-ui.css', '/docs/docs.js']))
    expect(await (await t.request('/docs/docs.js')).text()).toContain("url: '/openapi.json'")
  })
})
