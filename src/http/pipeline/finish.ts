import type { Config } from '../../config.js'
import { CLIENT_CLOSED_REQUEST } from '../../core/deadlines.js'
import { errorBody } from '../../core/errors.js'
import { compressAnswer } from '../compression.js'
import { clientError, graphqlErrorBody } from '../errors.js'
import { dataAsOfHeaders, isKeyPath, policyHeaders, rateLimitHeaders, withVary } from '../headers.js'
import { recordRequest } from '../middleware/observability.js'
import { type Answer, isStream } from './answer.js'
import type { Exchange } from './exchange.js'

// The last step of every request (docs/adr/0005-one-pipeline.md), and the only place that adds
// to an answer what policy says about it: the header policy (security, CSP, CORS, key
// management's no-store: src/http/headers.ts), the client's RateLimit fields, Data-As-Of,
// X-Request-Id, `Connection: close` after a body left unread, compression, the log line and the
// metrics. Steps only say what they answer.

type Headers = Record<string, string | string[]>

const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join(', ') : v)

// The policy headers depend only on the path's kind, the origin, the content type and key
// management: computed once per combination, per configuration.
const policies = new WeakMap<Config['cors'], Map<string, Record<string, string>>>()
function policyOf(cors: Config['cors'], path: string, origin: string | undefined, contentType: string | undefined, keyManagement: boolean) {
  // The policy reads the path only as: a CORS path (/graphql, /v1/…) or not.
  const kind = path === '/graphql' || path.startsWith('/v1/') ? 'api' : 'other'
  let byKey = policies.get(cors)
  if (!byKey) policies.set(cors, (byKey = new Map()))
  const key = `${kind}\u0000${keyManagement ? 1 : 0}\u0000${origin ?? ''}\u0000${contentType ?? ''}`
  let policy = byKey.get(key)
  if (!policy) {
    policy = policyHeaders(cors, path, origin ?? null, contentType ?? null, keyManagement)
    // Origins and paths are the client's to choose: a bounded number of combinations is kept.
    if (byKey.size < 1024) byKey.set(key, policy)
  }
  return policy
}

/**
 * The error answer in the shape of the route: a GraphQL response on /graphql, the standard body
 * elsewhere (`shape` says otherwise: an upgrade refused on /graphql is no GraphQL exchange).
 */
export function errorAnswer(x: Exchange, error: unknown, shape: 'graphql' | 'standard' = x.path === '/graphql' ? 'graphql' : 'standard'): Answer {
  const clientGone = x.deadline?.clientGone || x.client.aborted
  const { app, headers: own } = clientError(error, { requestId: x.requestId, path: x.path, clientGone })
  const headers: Headers = {}
  for (const name in own) headers[name.toLowerCase()] = own[name]!
  headers['content-type'] = 'application/json'
  if (shape === 'graphql') {
    // Refused before its operation was known (a body over the limit): answered as key management would be.
    x.keyManagement ??= true
    headers['cache-control'] = 'no-store'
    return { status: app.status, headers, body: JSON.stringify(graphqlErrorBody(app)) }
  }
  return { status: app.status, headers, body: JSON.stringify(errorBody(app.code, app.message)) }
}

/** `draining`: the instance is shutting down (src/app.ts `drain`, called by src/server.ts on SIGTERM). */
export function finisher(config: Pick<Config, 'cors' | 'compressMinBytes'>, draining: () => boolean = () => false) {
  return async function finish(x: Exchange, answer: Answer): Promise<Answer> {
    const h = answer.headers
    const policy = policyOf(config.cors, x.path, x.header('origin'), one(h['content-type']), isKeyPath(x.path) || x.keyManagement === true)
    for (const name in policy) {
      const value = policy[name]!
      // What a step set itself wins (a page's own CSP, a file's nosniff), but Vary accumulates and
      // CORS and key management's no-store are the policy's.
      if (name === 'vary') h.vary = withVary(one(h.vary), value)
      else if (h[name] === undefined || name.startsWith('access-control-') || name === 'cache-control') h[name] = value
    }
    const status = answer.status
    if (x.dataAsOf) Object.assign(h, dataAsOfHeaders(x.dataAsOf, status))
    const counted = x.counted.public
    if (counted && status < 400) Object.assign(h, rateLimitHeaders(await counted.catch(() => null), status))
    h['x-request-id'] = x.requestId
    // A refusal that left the request body unread: the rest of it is still on its way and would be
    // read as the next request on a keep-alive connection. The client is told to open a new one.
    // While draining, every answer asks its client to reconnect: a keep-alive connection would
    // otherwise stay on this instance until it closes, past the load balancer's reaction.
    if (x.bodyUnread() || draining()) h.connection = 'close'
    const out = isStream(answer) ? answer : await compressAnswer(answer, x.method, x.header('accept-encoding'), config.compressMinBytes)
    recordRequest(x.requestId, x.method, x.route, x.deadline?.clientGone ? CLIENT_CLOSED_REQUEST : status, x.started)
    return out
  }
}
