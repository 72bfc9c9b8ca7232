import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from 'jose'

/** A signing key made by the test, with its public half as a JWK (kid and alg set). */
export interface TestKey {
  alg: 'ES256' | 'RS256'
  kid: string
  privateKey: CryptoKey
  publicJwk: JWK
}

export async function testKey(alg: 'ES256' | 'RS256', kid: string): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  return { alg, kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } }
}

export const jwksOf = (...keys: TestKey[]) => ({ keys: keys.map((k) => k.publicJwk) })

/** Signs a wallet-session token; `exp` defaults to `now + 1 h` (seconds), pass `exp: undefined` to leave it out. */
export async function signSession(key: TestKey, claims: JWTPayload, options: { now?: number; header?: Record<string, unknown> } = {}): Promise<string> {
  const now = Math.floor((options.now ?? Date.now()) / 1000)
  const payload: JWTPayload = { sub: 'user-1', iat: now, exp: now + 3600, ...claims }
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k]
  return new SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...options.header }).sign(key.privateKey)
}

/**
 * A token signed by `key` (ES256) over header and claims written as given: JSON text a library
 * would never produce, such as a member name twice.
 */
export async function signRawText(key: TestKey, header: string, claims: string): Promise<string> {
  if (key.alg !== 'ES256') throw new Error('signRawText signs with ES256 keys')
  const input = `${Buffer.from(header).toString('base64url')}.${Buffer.from(claims).toString('base64url')}`
  // WebCrypto's ECDSA signature is r‖s, the form JWS uses.
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, new TextEncoder().encode(input))
  return `${input}.${Buffer.from(signature).toString('base64url')}`
}

const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url')

/** A compact JWS assembled by hand (for `alg: none`, tampering and other forgeries). */
export const rawJwt = (header: unknown, payload: unknown, signature = '') => `${b64(header)}.${b64(payload)}.${signature}`

/** A JWKS endpoint on loopback that tests can switch to failing, counting its requests. */
export interface JwksServer {
  url: string
  requests: number
  /** `ok`: serve the keys; `error`: HTTP 500; `down`: the server is closed. */
  setMode(mode: 'ok' | 'error'): void
  setKeys(jwks: { keys: JWK[] }): void
  close(): Promise<void>
}

export async function startJwksServer(jwks: { keys: JWK[] }): Promise<JwksServer> {
  let keys = jwks
  let mode: 'ok' | 'error' = 'ok'
  const state = { requests: 0 }
  const server: Server = createServer((_req, res) => {
    state.requests++
    if (mode === 'error') {
      res.writeHead(500).end('boom')
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(keys))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    get requests() {
      return state.requests
    },
    setMode: (m) => (mode = m),
    setKeys: (k) => (keys = k),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
