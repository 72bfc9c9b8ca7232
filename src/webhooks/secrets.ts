import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'

// Signing secrets. Standard Webhooks signs with HMAC-SHA256, so the gateway needs the secret
// itself at every delivery: unlike API keys, a digest cannot be stored. A database dump (a backup,
// a read replica, a leaked snapshot) would then let anyone forge our webhooks to every integrator,
// so secrets are sealed with AES-256-GCM under WEBHOOK_SECRET_KEY, a key that lives in the
// environment, not in the database. The endpoint id is the AEAD's associated data: a sealed
// secret copied onto another endpoint's row does not open.
// Without a key (the embedded demo, development) secrets are stored as written, marked `plain.`;
// setting a key later keeps those readable and seals every secret created from then on.

const SECRET_BYTES = 32
const PREFIX = 'whsec_'

/** A new `whsec_…` secret: 32 random bytes, base64 (the format Standard Webhooks libraries accept). */
export function generateSecret(): string {
  return PREFIX + randomBytes(SECRET_BYTES).toString('base64')
}

export interface SecretBox {
  /** True when secrets are sealed (a key is configured). */
  readonly sealing: boolean
  seal(secret: string, endpointId: string): string
  open(stored: string, endpointId: string): string
}

export class SecretKeyError extends Error {
  override name = 'SecretKeyError'
}

const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 8)

/**
 * `keys`: the current key first (it seals), then older keys that still open rows sealed before a
 * rotation (the service's resealSecrets() moves every row to the current key, after which the
 * old ones can go).
 */
export function createSecretBox(keys: readonly Buffer[] = []): SecretBox {
  const byId = new Map(keys.map((k) => [keyId(k), k] as const))
  const current = keys[0]
  return {
    sealing: current !== undefined,
    seal(secret, endpointId) {
      if (!current) return `plain.${secret}`
      const iv = randomBytes(12)
      const cipher = createCipheriv('aes-256-gcm', current, iv)
      cipher.setAAD(Buffer.from(endpointId))
      const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
      return ['v1', keyId(current), iv.toString('base64url'), sealed.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.')
    },
    open(stored, endpointId) {
      if (stored.startsWith('plain.')) return stored.slice('plain.'.length)
      const [version, id, iv, sealed, tag] = stored.split('.')
      if (version !== 'v1' || !id || !iv || !sealed || !tag) throw new SecretKeyError('The stored signing secret has an unknown format.')
      const key = byId.get(id)
      if (!key) throw new SecretKeyError(`The signing secret was sealed with a key (id ${id}) that WEBHOOK_SECRET_KEY does not list.`)
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
        decipher.setAAD(Buffer.from(endpointId))
        decipher.setAuthTag(Buffer.from(tag, 'base64url'))
        return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8')
      } catch {
        throw new SecretKeyError('The stored signing secret does not open with its key (tampered, or moved to another endpoint).')
      }
    },
  }
}
