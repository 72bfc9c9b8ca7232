import fc from 'fast-check'
import { MAX_ECHO } from '../../src/core/errors.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { ADMIN_TOKEN, createKeysTestApp, INTERNAL_TOKEN, type KeysTestApp } from '../support/keys.js'
import { testBackend } from '../support/db.js'
import { insertVault } from '../support/fixtures.js'
import { nastyJson, nastyString, runs, violation } from '../support/fuzz.js'
import { Tally } from '../support/report.js'

const WALLET = '0x00000000000000000000000000000000000000b1'

/** Every answer the REST side documents (docs/hardening.md "Bad input"): never 500, and 503 only when the database is down. */
const DOCUMENTED = [200, 204, 304, 400, 401, 403, 404, 406, 413, 415, 429]

const templates = [
  '/v1/vaults',
  '/v1/vaults/:v',
  '/v1/vaults/:v/composition',
  '/v1/vaults/:v/composition/series',
  '/v1/users/:a/redeems',
  '/v1/users/:a/vaults/:v/transactions',
  '/v1/users/:a/vaults/:v/summary',
  '/v1/:x',
  '/v1/:x/:x/:x',
  '/:x',
  '/v1/apiKey',
  '/admin/import',
  '/admin/allowlist/:a',
  '/internal/v1/apiKey/verify',
  '/healthz',
]

/** Percent-encoding that also takes lone surrogates (encodeURIComponent throws on them). */
const encode = (s: string) => encodeURIComponent(s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'))

/** A path segment: a real id now and then (so routes get past validation), otherwise anything, encoded or raw. */
const segment = fc.oneof(
  fc.constantFrom('v1', 'v2', WALLET, WALLET.toUpperCase().replace('0X', '0x'), 'nope'),
  nastyString.map(encode),
  fc.constantFrom('%', '%zz', '%E0%A4%A', '%00', '..', '.', '%2F', '%2e%2e', ';', 'a b', '\u00e9'),
  fc.webSegment(),
)

const queryKey = fc.oneof(fc.constantFrom('limit', 'cursor', 'type', 'group_by', 'timeframe', 'chain', 'status'), fc.webSegment())
const queryValue = fc.oneof(
  fc.constantFrom(
    '1',
    '200',
    '201',
    '0',
    '-1',
    '50.5',
    '1e2',
    '007',
    '9007199254740993',
    'deposit',
    'redeem',
    'asset',
    'platform',
    '7d',
    '1y',
    'all',
    'active',
    '',
  ),
  nastyString,
)
const query = fc
  .array(fc.tuple(queryKey, queryValue, fc.boolean()), { maxLength: 5 })
  .map((pairs) => (pairs.length === 0 ? '' : `?${pairs.map(([k, v, raw]) => (raw ? `${k}=${v}` : `${encode(k)}=${encode(v)}`)).join('&')}`))

const headers = fc.record(
  {
    'content-type': fc.constantFrom(
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=latin1',
      '*/*',
      '',
    ),
    accept: fc.constantFrom('application/json', 'text/html', '*/*', 'application/xml', 'nonsense', ''),
    'if-none-match': fc.oneof(
      fc.constantFrom('*', 'W/"x"', '"', ''),
      nastyString.map((s) => s.replace(/[^\x20-\x7e]/g, '')),
    ),
    'x-request-id': nastyString.map((s) => s.replace(/[^\x20-\x7e]/g, '')),
    authorization: fc.oneof(
      fc.constantFrom(`Bearer ${ADMIN_TOKEN}`, `Bearer ${INTERNAL_TOKEN}`, 'SESSION', 'Bearer ', 'Basic abc', 'Bearer a.b.c'),
      nastyString.map((s) => s.replace(/[^\x20-\x7e]/g, '')),
    ),
    'x-service-wallet': fc.constantFrom(WALLET, '0x12', ''),
    origin: fc.constantFrom('https://evil.example', 'null', 'http://localhost:3000'),
    'content-encoding': fc.constantFrom('gzip', 'br', 'identity'),
  },
  { requiredKeys: [] },
)

const body = fc.option(
  fc.oneof(
    nastyJson.map((v) => JSON.stringify(v) ?? 'null'),
    nastyString,
    fc.constantFrom('{', '{"a":', '\u0000', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}'),
    fc.nat({ max: 150_000 }).map((n) => `{"pad":"${'x'.repeat(n)}"}`),
  ),
  { nil: undefined },
)

const request = fc.record({
  method: fc.constantFrom('GET', 'GET', 'GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS'),
  template: fc.constantFrom(...templates),
  segments: fc.array(segment, { minLength: 3, maxLength: 3 }),
  query,
  headers,
  body,
})

describe(`REST under random input (${testBackend})`, () => {
  let t: KeysTestApp
  let session: string
  beforeAll(async () => {
    // Key management configured (a wallet-session signing key, admin and internal tokens), WALLET allowlisted.
    // No wrong-token limit: past it every admin and internal request would be a 429, the routes behind them unreached.
    t = await createKeysTestApp({ allowlist: [WALLET], env: { RATE_LIMIT_PUBLIC_PER_MINUTE: '0', RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: '0' } })
    session = (await t.session([WALLET])).authorization!
    await insertVault(t.db.prisma, 'v1')
    await insertVault(t.db.prisma, 'v2', { status: 'paused' })
    await importDocument(
      {
        compositions: [
          {
            vault_id: 'v1',
            as_of: '2026-01-01T00:00:00.000Z',
            positions: [{ platform: 'Aave', asset: 'USD Coin', symbol: 'USDC', pct: 100, apy_est_pct: 4, icon: 'https://icons.test/usdc.svg' }],
          },
        ],
        transactions: [
          {
            id: 't1',
            vault_id: 'v1',
            address: WALLET,
            type: 'deposit',
            status: 'completed',
            amount: '100',
            shares: '99',
            timestamp: '2026-01-02T00:00:00.000Z',
            completed_at: '2026-01-02T00:01:00.000Z',
            tx_hash: `0x${'1'.repeat(64)}`,
          },
          {
            id: 't2',
            vault_id: 'v1',
            address: WALLET,
            type: 'redeem',
            status: 'pending',
            amount: '5',
            shares: '5',
            timestamp: '2026-01-03T00:00:00.000Z',
            completed_at: null,
            tx_hash: `0x${'2'.repeat(64)}`,
          },
        ],
      },
      t.db.prisma,
    )
  })
  afterAll(() => t.close())

  it('answers every request with a documented status and the standard error body, never a 500 or a stack', async () => {
    const tally = new Tally('REST fuzz')
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        let i = 0
        const path = r.template.replace(/:[avx]/g, () => r.segments[i++]!)
        const headers = Object.fromEntries(Object.entries(r.headers).filter(([, v]) => v !== undefined)) as Record<string, string>
        if (headers.authorization === 'SESSION') headers.authorization = session
        const init: RequestInit = { method: r.method, headers }
        if (r.body !== undefined && !['GET', 'HEAD'].includes(r.method)) init.body = r.body
        let res: Response
        try {
          res = await t.request(`${path}${r.query}`, init)
        } catch (e) {
          // The only thing allowed to fail before the gateway sees it: a URL the Request constructor refuses.
          if (e instanceof TypeError && /Invalid URL/.test(e.message)) return
          throw e
        }
        tally.add(res.status)
        // The path's segments and the query's names and values, as the gateway reads them.
        const decode = (v: string) => {
          try {
            return decodeURIComponent(v)
          } catch {
            return v
          }
        }
        const url = new URL(`http://x${path}${r.query}`)
        const sent = [...url.pathname.split('/').map(decode), ...[...url.searchParams].flat()].filter((v) => v.length > MAX_ECHO)
        const problem = await violation(res, { graphql: false, method: r.method, allowed: DOCUMENTED, sent })
        expect(problem, `${r.method} ${path}${r.query}`).toBeUndefined()
      }),
      runs(300),
    )
    tally.print()
    // The generator reaches real answers, not only rejections.
    expect(tally.byStatus.get('200')).toBeGreaterThan(0)
    expect(tally.byStatus.get('400')).toBeGreaterThan(0)
    expect(tally.byStatus.get('404')).toBeGreaterThan(0)
  })
})
