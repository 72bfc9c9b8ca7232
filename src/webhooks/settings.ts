import type { OutboundPolicy } from './outbound.js'
import { parseSecretKey } from './secrets.js'

// The webhook settings from the environment, for the boot-time configuration to call (every value
// is validated at boot, decisions.md §8):
// - NODE_ENV=production: webhook URLs must be https.
// - WEBHOOK_ALLOW_PRIVATE=true|false (default false): deliver to loopback and private addresses too.
// - WEBHOOK_SECRET_KEY: 32 bytes (64 hex digits or base64) sealing the signing secrets at rest;
//   several keys separated by commas during a rotation, the current one first.

export interface WebhookSettings {
  policy: Pick<OutboundPolicy, 'requireHttps' | 'allowPrivate'>
  secretKeys: Buffer[]
}

export function webhookSettingsFromEnv(env: Record<string, string | undefined>): WebhookSettings {
  const allow = env.WEBHOOK_ALLOW_PRIVATE?.trim().toLowerCase()
  if (allow !== undefined && allow !== '' && allow !== 'true' && allow !== 'false') {
    throw new Error('WEBHOOK_ALLOW_PRIVATE must be true or false.')
  }
  const keys = (env.WEBHOOK_SECRET_KEY ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean)
  return {
    policy: { requireHttps: env.NODE_ENV === 'production', allowPrivate: allow === 'true' },
    secretKeys: keys.map(parseSecretKey),
  }
}
