import fc from 'fast-check'
import { isErrorCode, MAX_ECHO } from '../../src/core/errors.js'

/** What a crash, a driver message or a stack trace looks like in a body. */
const LEAKS = [
  /\s{2,}at \S.*:\d+:\d+\)?/,
  /\.(ts|js|mjs|cjs):\d+/,
  /file:\/\//,
  /node_modules/,
  /prisma\./i,
  /invocation/i,
  /Unexpected error/,
  /TypeError|ReferenceError|RangeError/,
]

export function leaks(text: string): string | undefined {
  return LEAKS.find((re) => re.test(text))?.source
}

/**
 * Why an answer breaks the contract, or undefined when it keeps it: a documented status, JSON
 * with the standard error body for every error (a GraphQL response on /graphql), a known code
 * that is not `internal`, no stack or driver text, security headers.
 */
export async function violation(
  res: Response,
  { graphql, method, allowed, sent = [] }: { graphql: boolean; method: string; allowed: number[]; sent?: string[] },
): Promise<string | undefined> {
  if (!allowed.includes(res.status)) return `status ${res.status}: ${(await res.text()).slice(0, 300)}`
  if (res.headers.get('x-content-type-options') !== 'nosniff') return 'no security headers'
  const text = await res.text()
  const leak = leaks(text)
  if (leak) return `body leaks ${leak}: ${text.slice(0, 300)}`
  // No client value longer than MAX_ECHO comes back, raw or JSON-escaped (src/core/errors.ts quoted()).
  for (const value of sent) {
    const head = value.slice(0, MAX_ECHO + 1)
    if (text.includes(head) || text.includes(JSON.stringify(head).slice(1, -1)))
      return `echoes a client value of ${value.length} characters: ${text.slice(0, 300)}`
  }
  if (method === 'HEAD' || res.status === 204 || res.status === 304) return text === '' ? undefined : 'body on a bodiless answer'
  if (res.headers.get('content-type')?.startsWith('text/html')) return undefined // GraphiQL
  let body: any
  try {
    body = JSON.parse(text)
  } catch {
    return `not JSON: ${text.slice(0, 200)}`
  }
  if (graphql) {
    if (typeof body !== 'object' || body === null || (!('data' in body) && !('errors' in body))) return `not a GraphQL response: ${text.slice(0, 200)}`
    for (const e of body.errors ?? []) {
      if (typeof e.message !== 'string' || !isErrorCode(e.extensions?.code)) return `GraphQL error without a known code: ${JSON.stringify(e)}`
      if (/cost limit|would be larger than/i.test(e.message) && e.extensions.code !== 'bad_request')
        return `cost refusal not coded bad_request: ${JSON.stringify(e)}`
      if (e.extensions.code === 'internal') return `internal error: ${JSON.stringify(e)}`
      if (/Did you mean/.test(e.message)) return `suggestion leaked: ${e.message}`
    }
    if (res.status >= 400 && !body.errors?.length) return `status ${res.status} without errors`
    return undefined
  }
  if (res.status >= 400) {
    const keys = Object.keys(body ?? {})
      .sort()
      .join(',')
    if (keys !== 'error,server_time_ms,status' || body.status !== 'error' || !Number.isInteger(body.server_time_ms))
      return `not the standard error body: ${text.slice(0, 200)}`
    if (
      Object.keys(body.error).sort().join(',') !== 'code,message' ||
      !isErrorCode(body.error.code) ||
      typeof body.error.message !== 'string' ||
      body.error.message === ''
    ) {
      return `bad error object: ${JSON.stringify(body.error)}`
    }
    if (body.error.code === 'internal') return `internal error: ${text}`
  }
  return undefined
}

/**
 * The values of a request longer than MAX_ECHO that an answer must not repeat: every string of a
 * JSON value (member names too), and every string literal and name of GraphQL text in it.
 */
export function longClientValues(...sources: unknown[]): string[] {
  const out: string[] = []
  const visit = (v: unknown, graphqlText: boolean) => {
    if (typeof v === 'string') {
      if (v.length > MAX_ECHO && !graphqlText) out.push(v)
      if (graphqlText) {
        for (const m of v.matchAll(/"(?:[^"\\]|\\.)*"|[_A-Za-z][_0-9A-Za-z]*|-?\d[\d.eE+-]*/g)) {
          let token = m[0]
          if (token.startsWith('"'))
            try {
              token = JSON.parse(token) as string
            } catch {
              token = token.slice(1, -1)
            }
          if (token.length > MAX_ECHO) out.push(token)
        }
      }
    } else if (Array.isArray(v)) for (const x of v) visit(x, false)
    else if (v !== null && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        if (k.length > MAX_ECHO) out.push(k)
        visit(x, k === 'query')
      }
  }
  for (const source of sources) visit(source, false)
  return out
}

/**
 * Page cursors we did not issue: Pothos' own format with a number or a string where an id belongs,
 * our format with a forged or truncated MAC, and a raw API key pasted in (it must come back nowhere).
 */
export const forgedCursor = fc.oneof(
  fc.integer().map((n) => Buffer.from(`GPC:N:${n}`).toString('base64')),
  fc.string({ maxLength: 20 }).map((id) => Buffer.from(`GPC:S:${id}`).toString('base64')),
  fc.tuple(fc.base64String({ maxLength: 60 }), fc.base64String({ maxLength: 30 })).map(([a, b]) => `${a.replace(/=/g, '')}.${b.replace(/=/g, '')}`),
  fc.constantFrom('WzEsIngiLCJhIl0.AAAAAAAAAAAAAAAAAAAAAA', 'vaultgate_3yQnC7ZxHBkBk9SXxTbmmBsmXPYCpeHvHXSLS4Rz9Gf5', '.', 'a.b.c'),
)

/** Strings that tend to break parsers: empty, huge, control characters, bad escapes, lookalikes, forged cursors. */
export const nastyString = fc.oneof(
  forgedCursor,
  fc.constantFrom(
    '',
    ' ',
    '0',
    '-1',
    '1e309',
    'NaN',
    'null',
    'undefined',
    'true',
    '[]',
    '{}',
    '%',
    '%zz',
    '%00',
    '\u0000',
    '../..',
    '0x',
    '\ud800',
    '🦄',
    'ǅ',
    'Ω',
    '\u202e',
    "' OR 1=1 --",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a template placeholder is one of the hostile strings sent
    '${x}',
    '<script>',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.stringMatching(/^-?\d{1,90}(\.\d{1,40})?$/),
  fc.nat({ max: 20_000 }).map((n) => 'x'.repeat(n)),
)

/** Any JSON value, with nasty strings and extreme numbers among them. */
export const nastyJson: fc.Arbitrary<unknown> = fc.oneof(
  { depthSize: 'small' },
  fc.jsonValue({ maxDepth: 3 }),
  nastyString,
  fc.constantFrom(0, -0, -1, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1e308, 1.5, Number.MIN_VALUE),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
)

/** fast-check settings: moderate run counts in the suite (CI runs it on three Node versions and two backends); FUZZ_RUNS and FUZZ_SEED for a deeper or repeated local run. */
// A fixed seed by default so CI is repeatable; FUZZ_SEED picks another, FUZZ_SEED=random a fresh one each run.
const seed = process.env.FUZZ_SEED === 'random' ? undefined : Number(process.env.FUZZ_SEED ?? 20261122)
export const runs = (numRuns: number) => ({ numRuns: process.env.FUZZ_RUNS ? Number(process.env.FUZZ_RUNS) : numRuns, seed, endOnFailure: true })
