import { randomUUID } from 'node:crypto'
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose'

// `vaultgate dev token` (src/cli.ts): a wallet-session token for trying key management locally,
// signed by a key of our own instead of an identity provider's. The gateway is not changed for it:
// it trusts the key through the ordinary AUTH_JWKS_FILE / AUTH_ISSUER / AUTH_AUDIENCE settings
// (src/auth/session.ts) and admits the wallet through ALLOWLIST, which the command prints for the
// start. Nothing here opens the database, so a running gateway's data directory is never touched.

export const DEV_ISSUER = 'vaultgate-dev'
export const DEV_AUDIENCE = 'vaultgate-dev'
/** Within AUTH_MAX_TOKEN_AGE_S's default of a day. */
export const DEV_TOKEN_TTL_S = 12 * 3600
const ALG = 'ES256'

export interface DevToken {
  /** The public key set the gateway reads (AUTH_JWKS_FILE). */
  jwksFile: string
  /** Whether the signing key was made by this call (false: the one of an earlier run, reused). */
  created: boolean
  token: string
  expiresAt: Date
  /** The settings that make a gateway accept the token for `wallet`. */
  env: Record<string, string>
}

/** The folder holding the key pair: beside the embedded database's files, under the data directory. */
export const devAuthDir = (dataDir: string) => path.join(path.resolve(dataDir), 'dev-auth')

/** The signing key of an earlier run, or a new one written with its public key set (the private half readable by the owner only). */
async function signingKey(dir: string): Promise<{ jwk: JWK; created: boolean }> {
  const keyFile = path.join(dir, 'signing-key.jwk.json')
  const existing = await readFile(keyFile, 'utf8').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return undefined
    throw e
  })
  if (existing !== undefined) return { jwk: JSON.parse(existing) as JWK, created: false }
  const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true })
  const kid = `dev-${randomUUID()}`
  const jwk = { ...(await exportJWK(privateKey)), kid, alg: ALG }
  await mkdir(dir, { recursive: true })
  await writeFile(keyFile, `${JSON.stringify(jwk)}\n`, { mode: 0o600 })
  await chmod(keyFile, 0o600)
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' }
  await writeFile(path.join(dir, 'jwks.json'), `${JSON.stringify({ keys: [publicJwk] }, null, 2)}\n`)
  return { jwk, created: true }
}

/** A token for `wallet` (already normalized) in the `wallets` claim shape docs/keys.md describes for other issuers. */
export async function devToken(dataDir: string, wallet: string, now = new Date()): Promise<DevToken> {
  const dir = devAuthDir(dataDir)
  const { jwk, created } = await signingKey(dir)
  const iat = Math.floor(now.getTime() / 1000)
  const token = await new SignJWT({ wallets: [wallet] })
    .setProtectedHeader({ alg: ALG, kid: jwk.kid!, typ: 'JWT' })
    .setSubject(`dev:${wallet}`)
    .setIssuer(DEV_ISSUER)
    .setAudience(DEV_AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(iat + DEV_TOKEN_TTL_S)
    .sign(await importJWK(jwk, ALG))
  const jwksFile = path.join(dir, 'jwks.json')
  return {
    jwksFile,
    created,
    token,
    expiresAt: new Date((iat + DEV_TOKEN_TTL_S) * 1000),
    env: { AUTH_JWKS_FILE: jwksFile, AUTH_ISSUER: DEV_ISSUER, AUTH_AUDIENCE: DEV_AUDIENCE, ALLOWLIST: wallet },
  }
}
