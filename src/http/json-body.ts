import { badRequest } from '../core/errors.js'

// One rule for JSON request bodies (admin, webhooks, allowlist and the REST shim): a body that
// does not parse is `bad_request` naming what was sent, never the parser's message (it echoes input).

/** `text` parsed as JSON; `what` names it in the error ("The request body", "The import document"). */
export function parseJson(text: string, what = 'The request body'): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw badRequest(`${what} is not valid JSON.`)
  }
}

/** `text` parsed as a JSON object (not an array, not a scalar). */
export function parseJsonObject(text: string, what = 'The request body'): Record<string, unknown> {
  const body = parseJson(text, what)
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest(`${what} must be a JSON object.`)
  return body as Record<string, unknown>
}
