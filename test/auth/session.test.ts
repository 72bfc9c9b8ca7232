import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { exportSPKI, importJWK, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../src/app.js'
import { ConfigError, loadConfig } from '../../src/config.js'
import { createLogger, setLogger } from '../../src/core/log.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { jwksOf, rawJwt, signRawText, signSession, startJwksServer, testKey, type JwksServer, type TestKey } from '../support/jwt.js'
import { errorBody, okBody, answered } from '../support/bodies.js'

// Spec §5 and §7: who may manage keys. Every refusal is checked as a whole response body.

setLogger(createLogger('silent'))

const W1 = '0x1111111111111111111111111111111111111111'
const W2 = '0x2222222222222222222222222222222222222222'
const W3 = '0x3333333333333333333333333333333333333333' // never allowlisted
const ISSUER = 'https://issuer.vaultgate.test'
const AUDIENCE = 'vaultgate-test'

const UNAUTHORIZED = 'A valid wallet-session token is required (Authorization: Bearer <JWT>).'
const ok = okBody

async function getKey(t: TestApp, headers: Record<string, string>) {
  const res = await t.request('/v1/apiKey', { headers })
  return { status: res.status, body: await res.json(), headers: res.headers }
}
const bearer = (token: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...extra })

describe(`wallet-session authentication, JWKS served on loopback (${testBackend})`, () => {
  let es: TestKey
  let rs: TestKey
  let stranger: TestKey
  let jwks: JwksServer
  let t: TestApp
  const session = (claims: Record<string, unknown>, key: TestKey = es, header?: Record<string, unknown>) =>
    signSession(key, { iss: ISSUER, aud: AUDIENCE, ...claims }, { header })

  beforeAll(async () => {
    es = await testKey('ES256', 'es-1')
    rs = await testKey('RS256', 'rs-1')
    stranger = await testKey('ES256', 'es-1') // same kid, key not in the JWKS
    jwks = await startJwksServer(jwksOf(es, rs))
    // This suite sends dozens of refused tokens from one in-process client on purpose: its
    // wallet-session failure budget is off (the budget itself: `wrong wallet-session tokens` below).
    t = await createTestApp({
      AUTH_JWKS_URL: jwks.url,
      AUTH_ISSUER: ISSUER,
      AUTH_AUDIENCE: AUDIENCE,
      ALLOWLIST: `${W1},${W2}`,
      RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: '0',
    })
    await t.db.prisma.allowlistEntry.createMany({ data: [{ address: W1 }, { address: W2 }] })
  })
  afterAll(async () => {
    await t.close()
    await jwks.close()
  })

  it('accepts ES256 and RS256 tokens and answers the caller’s key (none yet)', async () => {
    for (const key of [es, rs]) {
      const r = await getKey(t, bearer(await session({ wallets: [W1] }, key)))
      expect(r).toMatchObject({ status: 200, body: ok(null) })
      expect(r.headers.get('cache-control')).toBe('no-store')
    }
  })

  it('finds the wallet in each token shape of decisions.md §7', async () => {
    const shapes = [
      {
        verified_credentials: [
          { format: 'blockchain', chain: 'eip155', address: W1.toUpperCase().replace('0X', '0x') },
          { format: 'email', email: 'a@b.c' },
        ],
      },
      {
        linked_accounts: [
          { type: 'wallet', chain_type: 'ethereum', address: W1 },
          { type: 'email', address: 'a@b.c' },
        ],
      },
      { linked_accounts: JSON.stringify([{ type: 'wallet', chain_type: 'ethereum', address: W1 }]) },
      { wallets: [W1] },
      { wallets: [{ address: W1 }] },
    ]
    for (const claims of shapes) expect((await getKey(t, bearer(await session(claims)))).body).toEqual(ok(null))
  })

  describe('every error row of spec §7', () => {
    it('401 unauthorized: no bearer', async () => {
      const r = await getKey(t, {})
      expect(r).toMatchObject({ status: 401, body: errorBody('unauthorized', UNAUTHORIZED) })
      expect(r.headers.get('www-authenticate')).toBe('Bearer')
    })

    it('403 not_whitelisted: the wallet is not on the allowlist', async () => {
      expect(await getKey(t, bearer(await session({ wallets: [W3] })))).toMatchObject({
        status: 403,
        body: errorBody('not_whitelisted', 'This wallet is not on the allowlist.'),
      })
    })

    it('400 wallet_required: several EVM wallets and no X-Service-Wallet', async () => {
      expect(await getKey(t, bearer(await session({ wallets: [W1, W2] })))).toMatchObject({
        status: 400,
        body: errorBody('wallet_required', 'The session token holds several EVM wallets; name one in the X-Service-Wallet header.'),
      })
    })

    it('403 wallet_required: the token holds no EVM wallet', async () => {
      const claims = {
        verified_credentials: [{ format: 'blockchain', chain: 'solana', address: 'So1anaAddre55' }],
        linked_accounts: [{ type: 'wallet', chain_type: 'solana', address: W1 }],
      }
      expect(await getKey(t, bearer(await session(claims)))).toMatchObject({
        status: 403,
        body: errorBody('wallet_required', 'The session token holds no EVM wallet.'),
      })
    })

    it('403 wallet_not_connected: X-Service-Wallet names a wallet the token does not hold', async () => {
      const message = 'X-Service-Wallet names a wallet that the session token does not hold.'
      expect(await getKey(t, bearer(await session({ wallets: [W1, W2] }), { 'x-service-wallet': W3 }))).toMatchObject({
        status: 403,
        body: errorBody('wallet_not_connected', message),
      })
      // Also with a single-wallet token: the header must still name it.
      expect(await getKey(t, bearer(await session({ wallets: [W1] }), { 'x-service-wallet': W2 }))).toMatchObject({
        status: 403,
        body: errorBody('wallet_not_connected', message),
      })
    })

    it('400 bad_request: X-Service-Wallet is not an EVM address', async () => {
      for (const header of ['0x123', 'vitalik.eth', `${W1}00`, `0x${'g'.repeat(40)}`]) {
        expect(await getKey(t, bearer(await session({ wallets: [W1, W2] }), { 'x-service-wallet': header }))).toMatchObject({
          status: 400,
          body: errorBody('bad_request', 'X-Service-Wallet must be an EVM address (0x followed by 40 hex digits).'),
        })
      }
    })

    it('400 bad_request: keyPrefix does not match its pattern', async () => {
      const token = await session({ wallets: [W1] })
      for (const keyPrefix of ['', '_x', '-x', 'a'.repeat(33), 'has space', 'ünï', 'a.b', 7]) {
        const res = await t.request('/v1/apiKey', {
          method: 'POST',
          headers: { ...bearer(token), 'content-type': 'application/json' },
          body: JSON.stringify({ keyPrefix }),
        })
        expect(res.status).toBe(400)
        const message =
          typeof keyPrefix === 'string'
            ? 'keyPrefix must be 1 to 32 characters: a letter or digit, then letters, digits, "_" or "-".'
            : 'keyPrefix must be a string; leave it out for the default prefix.'
        expect(await res.json()).toEqual(errorBody('bad_request', message))
      }
      expect(await t.db.prisma.apiKey.count()).toBe(0)
    })

    it('selects the named wallet case-insensitively', async () => {
      const token = await session({ wallets: [W1.toUpperCase().replace('0X', '0x'), W2] })
      expect(await getKey(t, bearer(token, { 'x-service-wallet': W1.toUpperCase().replace('0X', '0x') }))).toMatchObject({ status: 200, body: ok(null) })
      expect(await getKey(t, bearer(token, { 'x-service-wallet': W2.replace('0x', '0X') }))).toMatchObject({ status: 400 })
    })

    it('gives GraphQL the same codes in extensions.code, with 200 since the answer carries data (GraphQL over HTTP)', async () => {
      const q = '{ apiKey { id } }'
      // `apiKey` is nullable: the answer's data is {apiKey: null}, so it is 200 however the caller
      // was refused (clients such as Apollo drop the whole answer of a non-2xx); REST keeps 401/403/400.
      const cases: [Record<string, string>, string][] = [
        [{}, 'unauthorized'],
        [bearer(await session({ wallets: [W3] })), 'not_whitelisted'],
        [bearer(await session({ wallets: [W1, W2] })), 'wallet_required'],
        [bearer(await session({ wallets: [] })), 'wallet_required'],
        [bearer(await session({ wallets: [W1] }), { 'x-service-wallet': W2 }), 'wallet_not_connected'],
        [bearer(await session({ wallets: [W1] }), { 'x-service-wallet': 'nope' }), 'bad_request'],
      ]
      for (const [headers, code] of cases) {
        const r = await t.graphql(q, {}, headers)
        expect(r.status).toBe(200)
        expect(r.body.data).toEqual({ apiKey: null })
        expect(r.body.errors).toHaveLength(1)
        expect(r.body.errors[0].extensions.code).toBe(code)
      }
      // A mutation whose result is non-null has no data left when it fails: its own status stays.
      const bad = await t.graphql('mutation { createApiKey(keyPrefix: "-no") { id } }', {}, bearer(await session({ wallets: [W1] })))
      expect(bad.status).toBe(400)
      expect(bad.body).toMatchObject({ data: null })
      expect(bad.body.errors[0].extensions.code).toBe('bad_request')
    })
  })

  describe('refuses every forged or unusable token with the same 401', () => {
    const cases: [string, () => Promise<string>][] = [
      ['alg none', async () => rawJwt({ alg: 'none', typ: 'JWT' }, { iss: ISSUER, aud: AUDIENCE, exp: Math.floor(Date.now() / 1000) + 600, wallets: [W1] })],
      [
        'HS256 signed with the RS256 public key',
        async () => {
          const pem = await exportSPKI((await importJWK(rs.publicJwk, 'RS256')) as CryptoKey)
          return new SignJWT({ iss: ISSUER, aud: AUDIENCE, wallets: [W1] })
            .setProtectedHeader({ alg: 'HS256', kid: 'rs-1' })
            .setExpirationTime('1h')
            .sign(new TextEncoder().encode(pem))
        },
      ],
      ['an unknown kid', async () => session({ wallets: [W1] }, es, { kid: 'nobody' })],
      ['a key not in the JWKS (same kid)', async () => session({ wallets: [W1] }, stranger)],
      [
        'a tampered payload',
        async () => {
          const [h, , s] = (await session({ wallets: [W3] })).split('.')
          const forged = Buffer.from(JSON.stringify({ iss: ISSUER, aud: AUDIENCE, exp: Math.floor(Date.now() / 1000) + 600, wallets: [W1] })).toString(
            'base64url',
          )
          return `${h}.${forged}.${s}`
        },
      ],
      ['an expired token', async () => session({ wallets: [W1], iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 60 })],
      ['a future nbf', async () => session({ wallets: [W1], nbf: Math.floor(Date.now() / 1000) + 120 })],
      ['an iat in the future (past the 5 s skew)', async () => session({ wallets: [W1], iat: Math.floor(Date.now() / 1000) + 60 })],
      [
        'an iat older than AUTH_MAX_TOKEN_AGE_S (a day), though unexpired',
        async () => session({ wallets: [W1], iat: Math.floor(Date.now() / 1000) - 86_400 - 60 }),
      ],
      ['no iat', async () => session({ wallets: [W1], iat: undefined })],
      [
        'a claim named twice (JSON.parse would keep the allowlisted wallet)',
        async () => {
          const now = Math.floor(Date.now() / 1000)
          const claims = `{"iss":"${ISSUER}","aud":"${AUDIENCE}","sub":"u1","iat":${now},"exp":${now + 600},"wallets":["${W3}"],"wallets":["${W1}"]}`
          return signRawText(es, '{"alg":"ES256","kid":"es-1","typ":"JWT"}', claims)
        },
      ],
      [
        'a header member named twice',
        async () => {
          const now = Math.floor(Date.now() / 1000)
          const claims = JSON.stringify({ iss: ISSUER, aud: AUDIENCE, sub: 'u1', iat: now, exp: now + 600, wallets: [W1] })
          return signRawText(es, '{"alg":"none","kid":"es-1","typ":"JWT","alg":"ES256"}', claims)
        },
      ],
      [
        'a nested member named twice',
        async () => {
          const now = Math.floor(Date.now() / 1000)
          const claims = `{"iss":"${ISSUER}","aud":"${AUDIENCE}","iat":${now},"exp":${now + 600},"wallets":[{"address":"${W3}","address":"${W1}"}]}`
          return signRawText(es, '{"alg":"ES256","kid":"es-1","typ":"JWT"}', claims)
        },
      ],
      [
        'a valid token whose signature differs only in the unused bits of its last base64url character',
        async () => {
          const token = await session({ wallets: [W1] })
          // ES256: 64 bytes are 86 characters, the last of which carries 4 unused bits.
          const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
          const last = alphabet.indexOf(token.at(-1)!)
          const mutated = token.slice(0, -1) + alphabet[last ^ 1]
          expect(Buffer.from(mutated.split('.')[2]!, 'base64url')).toEqual(Buffer.from(token.split('.')[2]!, 'base64url'))
          expect((await getKey(t, bearer(token))).status).toBe(200)
          return mutated
        },
      ],
      ['a wrong issuer', async () => session({ wallets: [W1], iss: 'https://evil.test' })],
      ['no issuer', async () => session({ wallets: [W1], iss: undefined })],
      ['a wrong audience', async () => session({ wallets: [W1], aud: 'someone-else' })],
      ['no exp', async () => session({ wallets: [W1], exp: undefined })],
      ['garbage', async () => 'not.a.jwt'],
      ['non-base64 parts', async () => '%%%.***.!!!'],
      ['a JWE-shaped token', async () => 'a.b.c.d.e'],
      ['a 64 KB token', async () => session({ wallets: [W1], padding: 'x'.repeat(64 * 1024) })],
    ]
    it('accepts the same hand-signed token when no name repeats, and one issued 5 s in the future (clock skew)', async () => {
      const now = Math.floor(Date.now() / 1000)
      const claims = `{"iss":"${ISSUER}","aud":"${AUDIENCE}","sub":"u1","iat":${now},"exp":${now + 600},"wallets":["${W1}"],"note":"wallets, \\"wallets\\""}`
      expect((await getKey(t, bearer(await signRawText(es, '{"alg":"ES256","kid":"es-1","typ":"JWT"}', claims)))).status).toBe(200)
      expect((await getKey(t, bearer(await session({ wallets: [W1], iat: now + 4 })))).status).toBe(200)
    })

    for (const [name, make] of cases) {
      it(name, async () => {
        const r = await getKey(t, bearer(await make()))
        expect(r.status).toBe(401)
        expect(r.body).toEqual(errorBody('unauthorized', UNAUTHORIZED))
      })
    }

    it('an empty or malformed Authorization header', async () => {
      for (const authorization of ['Bearer ', 'Bearer', 'Basic dXNlcjpwYXNz', `Token ${await session({ wallets: [W1] })}`, 'Bearer a b']) {
        const r = await getKey(t, { authorization })
        expect([authorization, r.status, r.body]).toEqual([authorization, 401, errorBody('unauthorized', UNAUTHORIZED)])
      }
    })
  })
})

describe(`wrong wallet-session tokens from one address (${testBackend})`, () => {
  let es: TestKey
  let jwks: JwksServer
  let t: TestApp
  beforeAll(async () => {
    es = await testKey('ES256', 'es-1')
    jwks = await startJwksServer(jwksOf(es))
    t = await createTestApp({
      AUTH_JWKS_URL: jwks.url,
      AUTH_ISSUER: ISSUER,
      AUTH_AUDIENCE: AUDIENCE,
      ALLOWLIST: W1,
      TRUST_PROXY: '1',
      RATE_LIMIT_BEARER_FAILURES_PER_MINUTE: '3',
    })
    await t.db.prisma.allowlistEntry.createMany({ data: [{ address: W1 }] })
  })
  afterAll(async () => {
    await t.close()
    await jwks.close()
  })

  it('are refused with 429 past the budget (3 here), REST and GraphQL alike, while a valid session from the same address is served', async () => {
    const from = (ip: string, token: string) => bearer(token, { 'x-forwarded-for': ip })
    const valid = await signSession(es, { iss: ISSUER, aud: AUDIENCE, wallets: [W1] })
    const forged = `${valid.slice(0, -8)}AAAAAAAA`
    const answers = []
    for (let i = 0; i < 4; i++) answers.push(await getKey(t, from('10.77.0.1', forged)))
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 429])
    const refused = answers[3]!
    // The admin and internal families' 429 (src/core/rate-limit.ts retryIn): Retry-After, the rest of the minute.
    const retryAfter = Number(refused.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(refused.body).toEqual(errorBody('rate_limited', `Too many requests with a wrong token from this address; retry in ${retryAfter} s.`))
    const gql = await t.graphql('{ apiKey { id } }', {}, from('10.77.0.1', forged))
    expect(gql.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual(['rate_limited'])
    // The right token from the same address right after: served, on REST and GraphQL.
    expect(await getKey(t, from('10.77.0.1', valid))).toMatchObject({ status: 200, body: ok(null) })
    expect(await t.graphql('{ apiKey { id } }', {}, from('10.77.0.1', valid))).toMatchObject({ status: 200, body: answered({ apiKey: null }) })
    // Another address has its own budget.
    expect((await getKey(t, from('10.77.0.2', forged))).status).toBe(401)
  })
})

describe(`wallet-session keys that cannot be fetched (${testBackend})`, () => {
  it('answers 503 unavailable while the JWKS endpoint fails, and recovers without a restart', async () => {
    const es = await testKey('ES256', 'es-1')
    const jwks = await startJwksServer(jwksOf(es))
    jwks.setMode('error')
    const t = await createTestApp({ AUTH_JWKS_URL: jwks.url })
    try {
      await t.db.prisma.allowlistEntry.create({ data: { address: W1 } })
      const token = await signSession(es, { wallets: [W1] })
      const down = await getKey(t, bearer(token))
      expect(down).toMatchObject({ status: 503, body: errorBody('unavailable', "The identity provider's signing keys cannot be fetched; try again shortly.") })
      // A token that is not even a JWT is still the caller's fault.
      expect((await getKey(t, bearer('garbage'))).status).toBe(401)
      jwks.setMode('ok')
      expect(await getKey(t, bearer(token))).toMatchObject({ status: 200, body: ok(null) })
    } finally {
      await t.close()
      await jwks.close()
    }
  })

  it('answers 503 when the JWKS host refuses connections', async () => {
    const es = await testKey('ES256', 'es-1')
    const jwks = await startJwksServer(jwksOf(es))
    await jwks.close()
    const t = await createTestApp({ AUTH_JWKS_URL: jwks.url })
    try {
      const r = await getKey(t, bearer(await signSession(es, { wallets: [W1] })))
      expect(r).toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } })
    } finally {
      await t.close()
    }
  })

  it('answers 503 when no key source is configured', async () => {
    const t = await createTestApp()
    try {
      expect(await getKey(t, bearer('x'))).toMatchObject({
        status: 503,
        body: errorBody('unavailable', 'Key management is not configured on this server (AUTH_JWKS_URL or AUTH_JWKS_FILE).'),
      })
    } finally {
      await t.close()
    }
  })
})

describe(`wallet-session keys from AUTH_JWKS_FILE (${testBackend})`, () => {
  let dir: string
  let file: string
  let rs: TestKey
  let t: TestApp
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-jwks-'))
    file = path.join(dir, 'jwks.json')
    rs = await testKey('RS256', 'rs-1')
    await writeFile(file, JSON.stringify(jwksOf(rs)))
    t = await createTestApp({ AUTH_JWKS_FILE: file, AUTH_AUDIENCE: AUDIENCE })
    await t.db.prisma.allowlistEntry.create({ data: { address: W1 } })
  })
  afterAll(async () => {
    await t.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('verifies tokens signed by its keys, enforcing the audience', async () => {
    expect((await getKey(t, bearer(await signSession(rs, { wallets: [W1], aud: AUDIENCE })))).body).toEqual(ok(null))
    expect((await getKey(t, bearer(await signSession(rs, { wallets: [W1] })))).status).toBe(401)
  })

  it('picks up a rotated key when a token names a kid the file did not have', async () => {
    const next = await testKey('ES256', 'es-2')
    const token = await signSession(next, { wallets: [W1], aud: AUDIENCE })
    expect((await getKey(t, bearer(token))).status).toBe(401)
    await writeFile(file, JSON.stringify(jwksOf(rs, next)))
    const later = new Date(Date.now() + 2000)
    const { utimes } = await import('node:fs/promises')
    await utimes(file, later, later)
    expect((await getKey(t, bearer(token))).body).toEqual(ok(null))
  })

  it('requires every scope of AUTH_REQUIRED_SCOPE in the scope claim (Dynamic: user:basic)', async () => {
    const scoped = createApp({ config: loadConfig({ LOG_LEVEL: 'silent', AUTH_JWKS_FILE: file, AUTH_REQUIRED_SCOPE: 'user:basic' }), db: t.db })
    try {
      const status = async (claims: Record<string, unknown>) =>
        (await scoped.fetch(new Request('http://t/v1/apiKey', { headers: bearer(await signSession(rs, { wallets: [W1], ...claims })) }))).status
      expect(await status({ scope: 'user:basic wallet:read' })).toBe(200)
      expect(await status({ scope: ['user:basic'] })).toBe(200)
      expect(await status({ scope: 'requiresAdditionalAuth' })).toBe(401)
      expect(await status({})).toBe(401)
    } finally {
      await scoped.close()
    }
  })

  it('refuses to start with an unreadable or invalid file', async () => {
    const db = t.db
    const bad = path.join(dir, 'bad.json')
    await writeFile(bad, '{"not":"a key set"}')
    expect(() => createApp({ config: loadConfig({ AUTH_JWKS_FILE: bad }), db })).toThrow(
      new ConfigError(`Invalid configuration:\n  AUTH_JWKS_FILE: ${bad} is not a JSON Web Key Set ({"keys":[…]})`),
    )
    expect(() => createApp({ config: loadConfig({ AUTH_JWKS_FILE: path.join(dir, 'missing.json') }), db })).toThrow(
      `AUTH_JWKS_FILE: cannot read a JSON Web Key Set from ${path.join(dir, 'missing.json')} (ENOENT)`,
    )
  })
})
