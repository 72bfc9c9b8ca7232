import { z } from 'zod'
import { canonicalAddress } from '../core/client-address.js'
import { AppError, quoted } from '../core/errors.js'
import { canonicalCidr, canonicalCidrs, MAX_ALLOWED_CIDRS } from './cidr.js'
import { DEFAULT_KEY_PREFIX, KEY_NAME_MAX, KEY_PREFIX_PATTERN } from './format.js'
import type { NewKeySettings } from './service.js'

// The request bodies of key management, declared once (src/core/input.ts): `POST /v1/apiKey` and
// the `createApiKey` mutation's arguments are both read with CreateApiKeyInput, which the OpenAPI
// document shows as CreateApiKeyRequest; the allowlist's note and the exchange's verify request
// likewise. Each message names its field.

/** The message for a field the body does not declare: strict, since a misspelt field (key_prefix) must not silently mean a default. */
function onlyFields(names: string) {
  return (issue: z.core.$ZodRawIssue) =>
    issue.code === 'unrecognized_keys' ? `Unknown field ${quoted(String(issue.keys[0]))}; the body may only hold ${names}.` : undefined
}

// Unassigned, control and format characters (bidi overrides among them), line and paragraph separators.
const NAME_FORBIDDEN = /[\p{C}\p{Zl}\p{Zp}]/u
const NAME_RULE = `name must be 1 to ${KEY_NAME_MAX} printable characters, without leading or trailing spaces.`

export const CreateApiKeyInput = z
  .strictObject(
    {
      // `null` is refused like any other non-string: leaving the field out is how to ask for the default.
      keyPrefix: z
        .string({ error: 'keyPrefix must be a string; leave it out for the default prefix.' })
        .regex(KEY_PREFIX_PATTERN, 'keyPrefix must be 1 to 32 characters: a letter or digit, then letters, digits, "_" or "-".')
        .optional()
        .meta({ description: `Default "${DEFAULT_KEY_PREFIX}".` }),
      name: z
        .string({ error: 'name must be a string; leave it out for a key without one.' })
        // Counted in code points (JSON Schema's maxLength, below), not UTF-16 units; never trimmed or cut silently.
        .refine((s) => {
          const length = [...s].length
          return length >= 1 && length <= KEY_NAME_MAX && !NAME_FORBIDDEN.test(s) && s.trim() === s
        }, NAME_RULE)
        .optional()
        .meta({
          description: `A label: 1 to ${KEY_NAME_MAX} printable characters, without leading or trailing spaces.`,
          minLength: 1,
          maxLength: KEY_NAME_MAX,
        }),
      allowedCidrs: z
        .array(z.string({ error: 'allowedCidrs must be a list of strings; leave it out for a key usable from any IP.' }), {
          error: 'allowedCidrs must be a list of strings; leave it out for a key usable from any IP.',
        })
        .max(MAX_ALLOWED_CIDRS, `allowedCidrs may hold at most ${MAX_ALLOWED_CIDRS} networks.`)
        .check((ctx) => {
          for (const cidr of ctx.value) {
            try {
              canonicalCidr(cidr)
            } catch (e) {
              if (!(e instanceof AppError)) throw e
              ctx.issues.push({ code: 'custom', message: e.message, input: cidr, continue: false })
              return
            }
          }
        })
        // Stored canonical; the same type, so the document shows the input as it is.
        .overwrite(canonicalCidrs)
        .optional()
        .meta({
          description: `At most ${MAX_ALLOWED_CIDRS} IPv4/IPv6 networks ("203.0.113.0/24", "2001:db8::/32"; a bare address is one host) that verifications must come from; stored canonical. Absent or empty: any IP.`,
        }),
    },
    { error: onlyFields('"keyPrefix", "name" and "allowedCidrs"') },
  )
  .meta({ description: 'May be empty.' })

/** A parsed creation request as the key service takes it (absent fields: their defaults). */
export const newKeySettings = (input: z.output<typeof CreateApiKeyInput>): NewKeySettings => ({
  keyPrefix: input.keyPrefix ?? DEFAULT_KEY_PREFIX,
  name: input.name ?? null,
  allowedCidrs: input.allowedCidrs ?? [],
})

export const ALLOWLIST_NOTE_MAX = 500
const NOTE_RULE = `note must be a string of at most ${ALLOWLIST_NOTE_MAX} characters.`

/** The body of `PUT /admin/allowlist/{address}` (an empty body is no note). */
export const AllowlistNoteInput = z.strictObject(
  { note: z.string({ error: NOTE_RULE }).max(ALLOWLIST_NOTE_MAX, NOTE_RULE).nullable().optional() },
  { error: onlyFields('"note"') },
)

const API_KEY_RULE = 'apiKey must be a string.'
const CLIENT_IP_RULE = 'clientIp must be an IPv4 or IPv6 address.'

/**
 * The body of `POST /internal/v1/apiKey/verify`. Other fields are ignored. An empty key is a key
 * nobody holds (answered `unknown`), not a malformed request. `clientIp` comes out canonical
 * (src/core/client-address.ts: a zone index such as `%eth0` and a port dropped, an IPv4-mapped
 * address as its IPv4 one); null is an absent one.
 */
export const VerifyApiKeyInput = z.object(
  {
    apiKey: z.string({ error: API_KEY_RULE }),
    clientIp: z
      .string({ error: CLIENT_IP_RULE })
      .max(64, CLIENT_IP_RULE)
      .refine((text) => canonicalAddress(text) !== undefined, CLIENT_IP_RULE)
      .overwrite((text) => canonicalAddress(text)?.address ?? text)
      .nullable()
      .optional()
      .meta({ description: 'The IPv4 or IPv6 address the key was presented from (IPv4-mapped IPv6 is matched as IPv4); a malformed one is a 400.' }),
  },
  // A body that is not an object holds no key.
  { error: API_KEY_RULE },
)
