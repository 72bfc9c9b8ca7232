import { promisify } from 'node:util'
import { gunzip } from 'node:zlib'
import type { Context, MiddlewareHandler } from 'hono'
import { AppError, badRequest } from '../core/errors.js'
import type { AppEnv } from './env.js'

// What `POST /admin/import` accepts as a body (issue 25 row 9; docs/operations.md "Loading data"):
// JSON (`application/json`, or a `+json` type), sent as is or gzip-compressed, never larger than
// the import limit, compressed or not. Each rule is checked before the body is read.

const inflate = promisify(gunzip)

/** `application/json`, `application/vnd.x+json`, any parameters (`; charset=utf-8`). */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json$/

/** Refuses a body that is not JSON or not in an encoding the import reads (415), before it is read. */
export const importMediaType: MiddlewareHandler<AppEnv> = async (c, next) => {
  const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (!JSON_MEDIA_TYPE.test(type)) throw new AppError('unsupported_media_type', 'The import document must be sent as JSON: Content-Type: application/json.')
  encodingOf(c)
  await next()
}

type Encoding = 'identity' | 'gzip'

function encodingOf(c: Context): Encoding {
  const header = (c.req.header('content-encoding') ?? '').trim().toLowerCase()
  if (header === '' || header === 'identity') return 'identity'
  // x-gzip: RFC 9110 §8.4.1.3 asks recipients to take it as gzip.
  if (header === 'gzip' || header === 'x-gzip') return 'gzip'
  throw new AppError('unsupported_media_type', 'The import document may be sent as is or with Content-Encoding: gzip, nothing else.')
}

export function tooLarge(limitBytes: number): AppError {
  return new AppError('payload_too_large', `The import document is larger than ${limitBytes / 1024 / 1024} MiB.`)
}

/**
 * The body's bytes, inflated when gzip. The inflated size has the same limit as a plain body:
 * zlib stops at `limitBytes` of output (maxOutputLength), so a small body that would inflate to
 * gigabytes (a zip bomb) costs at most the limit before it is refused with 413.
 */
export async function importBytes(c: Context, limitBytes: number): Promise<Uint8Array> {
  const raw = new Uint8Array(await c.req.arrayBuffer())
  if (encodingOf(c) === 'identity') return raw
  try {
    return new Uint8Array(await inflate(raw, { maxOutputLength: limitBytes }))
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(limitBytes)
    throw badRequest('The import document is not valid gzip (Content-Encoding: gzip).')
  }
}
