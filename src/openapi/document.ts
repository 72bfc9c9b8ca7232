import { getOperationAST, parse } from 'graphql'
import { z } from 'zod'
import { defaultStatus, type RestErrorCode } from '../core/errors.js'
import type { JsonSchema, Params } from '../rest/params.js'
import type { ErrorDoc, RestRoute, RouteDoc, SecurityScheme } from '../rest/route.js'
import { components, ErrorBody } from '../rest/wire.js'
import { isKeyPath } from '../http/headers.js'
import examples from './examples.json' with { type: 'json' }

// The OpenAPI 3.1 document, generated from the REST shim's route table (and the descriptions of
// the few hand-written routes in ./operations.ts), never maintained beside it.

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE'

/** A successful answer of an operation. */
export interface ResponseDoc {
  description: string
  /** The JSON body (absent: no body, e.g. 304). */
  schema?: z.ZodType
  /** The media types of `schema` (default `application/json`), or of `textSchema`. */
  contentTypes?: string[]
  textSchema?: JsonSchema
  headers?: Record<string, { description: string; schema: JsonSchema }>
}

/** One operation of the document, in the terms the builder needs. */
export interface OperationDoc extends RouteDoc {
  method: HttpMethod
  /** OpenAPI style: `/v1/vaults/{vault_id}`. */
  path: string
  operationId: string
  params?: Params
  query?: Params
  body?: { schema: z.ZodType; required: boolean; description?: string }
  responses: Record<number, ResponseDoc>
  /** The body of error answers (default: the REST error body), and its media types. */
  errorSchema?: z.ZodType
  errorContentTypes?: string[]
}

const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1)

/** The operation name of a route's fixed GraphQL document, e.g. `CompositionSeries` → `compositionSeries`. */
export function operationIdOf(document: string): string {
  const name = getOperationAST(parse(document))?.name?.value
  if (!name) throw new Error(`REST route document has no operation name: ${document.slice(0, 60)}`)
  return lowerFirst(name)
}

const CACHE_HEADERS = {
  ETag: { description: 'A weak tag of the body; send it back in If-None-Match.', schema: { type: 'string' } },
  'Cache-Control': { description: 'Shared caches may keep the answer this long.', schema: { type: 'string', examples: ['public, max-age=10'] } },
}
const NO_STORE = { 'Cache-Control': { description: 'Always `no-store`.', schema: { type: 'string', const: 'no-store' } } }

/** On every successful answer of /v1 and /graphql (the per-client-IP limit; absent when RATE_LIMIT_PUBLIC_PER_MINUTE is 0). */
export const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': {
    description: 'The per-client-IP limit (draft-ietf-httpapi-ratelimit-headers): `"ip";q=<requests>;w=60`, RATE_LIMIT_PUBLIC_PER_MINUTE requests a minute.',
    schema: { type: 'string', pattern: '^"ip";q=[0-9]+;w=60$' },
  },
  RateLimit: {
    description:
      'Where this client stands: `"ip";r=<requests left>;t=<seconds until the window resets>`. Ignore it on an answer from a shared cache (Age > 0).',
    schema: { type: 'string', pattern: '^"ip";r=[0-9]+;t=[0-9]+$' },
  },
}

/** On every successful read (REST GETs, GraphQL queries; not key management): decisions §10. */
export const DATA_AS_OF_HEADER = {
  'Data-As-Of': {
    description:
      "The time of the newest data the answer used: the newest snapshot or transaction time of the vaults it read (a vault, a page of vaults, a wallet's history in its vaults), or the gateway's `data_as_of` (GET /v1/status) when it read none; RFC 3339 in UTC with milliseconds. A cached answer (304 included) keeps the value it was computed with. Absent while the gateway holds no data.",
    schema: { type: 'string', format: 'date-time', examples: ['2026-11-21T12:00:00.000Z'] },
  },
}

/** A shim route as an operation: `/v1` + its path, its documented errors, caching and parameters. */
export function restOperation(route: RestRoute, prefix = '/v1'): OperationDoc {
  const read = route.method === 'GET' && !isKeyPath(prefix + route.path) ? DATA_AS_OF_HEADER : {}
  const responses: Record<number, ResponseDoc> = {
    200: { description: 'OK', schema: route.response, headers: { ...(route.cache ? CACHE_HEADERS : NO_STORE), ...RATE_LIMIT_HEADERS, ...read } },
  }
  if (route.cache)
    responses[304] = { description: 'Not modified: the If-None-Match header names the current ETag. No body.', headers: { ...RATE_LIMIT_HEADERS, ...read } }
  const headers: Params = { ...route.headers }
  if (route.cache) {
    headers['If-None-Match'] = { description: 'ETags of answers you hold; a match answers 304.', schema: { type: 'string' }, parse: (t) => t }
  }
  return {
    method: route.method,
    path: prefix + route.path.replace(/:(\w+)/g, '{$1}'),
    operationId: operationIdOf(route.document),
    summary: route.summary,
    description: route.description,
    tags: route.tags,
    errors: route.errors,
    security: route.security,
    headers,
    params: route.params,
    query: route.query,
    body: route.body && { schema: route.body, required: false },
    responses,
  }
}

const SECURITY_SCHEMES: Record<SecurityScheme, Record<string, unknown>> = {
  walletSession: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'A wallet-session JWT from the embedded-wallet identity provider (`Authorization: Bearer <WALLET_SESSION_JWT>`). When the token holds several EVM wallets, `X-Service-Wallet` names the one to act for; the wallet must be on the allowlist.',
  },
  adminToken: {
    type: 'http',
    scheme: 'bearer',
    description: 'The operator token, `Authorization: Bearer $ADMIN_TOKEN`. Admin routes answer 404 while ADMIN_TOKEN is unset.',
  },
  internalToken: {
    type: 'http',
    scheme: 'bearer',
    description: "The order exchange's token, `Authorization: Bearer $INTERNAL_TOKEN`. Internal routes answer 404 while INTERNAL_TOKEN is unset.",
  },
}

const TAGS = [
  {
    name: 'Vaults',
    description:
      'Vault metadata, current composition and composition series, performance (share price, TVL, realized APY) and its series. Public and cacheable.',
  },
  { name: 'Status', description: 'How old the data is: the freshness contract.' },
  { name: 'Wallets', description: "A wallet's transactions, pending redeems and position summaries." },
  { name: 'API keys', description: 'Create, inspect and revoke the API key of the order-exchange interface, with a wallet-session token.' },
  { name: 'GraphQL', description: 'The GraphQL endpoint the REST routes are built on. GraphiQL: open /graphql in a browser.' },
  { name: 'Operations', description: 'Health, readiness and Prometheus metrics.' },
  { name: 'Admin', description: 'Operator routes behind ADMIN_TOKEN.' },
  {
    name: 'Webhooks',
    description: 'Signed push to integrators (Standard Webhooks): endpoints, deliveries and replays, behind ADMIN_TOKEN. The events are under `webhooks`.',
  },
  { name: 'Internal', description: 'Service-to-service routes behind INTERNAL_TOKEN.' },
]

/**
 * One example answer per error code, in the words the gateway uses (test/openapi/examples.test.ts
 * finds each sentence in src/): Swagger UI shows the example of the code an operation documents for
 * the status, not a made-up `"string"` nor another status' code.
 */
export const ERROR_EXAMPLES: Readonly<Record<RestErrorCode, string>> = {
  bad_request: 'limit must be an integer from 1 to 200.',
  not_found: 'Vault "usdc-main" was not found.',
  rate_limited: 'Too many requests from this address; retry in 12 s.',
  internal: 'Internal server error.',
  unavailable: 'The database is unavailable; try again shortly.',
  unauthorized: 'A valid wallet-session token is required (Authorization: Bearer <JWT>).',
  not_whitelisted: 'This wallet is not on the allowlist.',
  wallet_required: 'The session token holds no EVM wallet.',
  wallet_not_connected: 'X-Service-Wallet names a wallet that the session token does not hold.',
  payload_too_large: 'The import document is larger than 256 MiB.',
  unsupported_media_type: 'The import document must be sent as JSON: Content-Type: application/json.',
}

/** The demo data's answers (src/openapi/examples.json, written by scripts/openapi-examples.ts), by `METHOD /path`. */
const RESPONSE_EXAMPLES: Readonly<Record<string, unknown>> = examples.responses
/** Path parameters' examples: a demo vault and a demo wallet with a position in it. */
const PARAM_EXAMPLES: Readonly<Record<string, string>> = examples.params
const EXAMPLE_TIME_MS = 1_793_491_200_000 // the demo data's "now", 2026-11-01T00:00:00Z

const errorStatus = (e: ErrorDoc): [number, RestErrorCode] => (typeof e === 'string' ? [defaultStatus[e], e] : [e.status, e.code])

function parameters(where: 'path' | 'query' | 'header', params: Params | undefined) {
  return Object.entries(params ?? {}).map(([name, p]) => ({
    name,
    in: where,
    required: where === 'path',
    description: p.description,
    schema: p.schema,
    ...(where === 'path' && PARAM_EXAMPLES[name] !== undefined ? { example: PARAM_EXAMPLES[name] } : p.example === undefined ? {} : { example: p.example }),
  }))
}

/** An event the gateway POSTs to integrators' endpoints (OpenAPI 3.1 `webhooks`). */
export interface WebhookDoc {
  /** The event type, e.g. `vault.updated`. */
  name: string
  operationId: string
  summary: string
  description: string
  /** The request body the receiver gets. */
  body: z.ZodType
  /** Request headers the receiver gets (the signature headers). */
  headers: Params
}

export interface DocumentInfo {
  version: string
  description?: string
  webhooks?: WebhookDoc[]
}

/** Builds the OpenAPI 3.1 document of `operations`. Pure: the same input gives the same document. */
export function buildOpenApiDocument(operations: OperationDoc[], info: DocumentInfo) {
  const registry = z.registry<{ id: string }>()
  for (const [name, schema] of components) registry.add(schema, { id: name })
  const ref = (schema: z.ZodType, name: string) => {
    if (!registry.has(schema)) registry.add(schema, { id: name })
    return { $ref: `#/components/schemas/${registry.get(schema)!.id}` }
  }
  const json = (schema: z.ZodType, name: string, types = ['application/json'], extra: Record<string, unknown> = {}) =>
    Object.fromEntries(types.map((t) => [t, { schema: ref(schema, name), ...extra }]))
  const upperFirst = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)

  const paths: Record<string, Record<string, unknown>> = {}
  const ids = new Set<string>()
  for (const op of operations) {
    if (ids.has(op.operationId)) throw new Error(`Duplicate operationId ${op.operationId}`)
    ids.add(op.operationId)
    const declared = Object.keys(op.params ?? {})
      .sort()
      .join(',')
    const inPath = [...op.path.matchAll(/\{(\w+)\}/g)]
      .map((m) => m[1])
      .sort()
      .join(',')
    if (declared !== inPath) throw new Error(`${op.method} ${op.path} declares path parameters [${declared}]`)

    const responses: Record<string, unknown> = {}
    for (const [status, r] of Object.entries(op.responses)) {
      const name = `${upperFirst(op.operationId)}${status === '200' ? '' : status}Response`
      responses[status] = {
        description: r.description,
        ...(r.headers ? { headers: r.headers } : {}),
        ...(r.schema
          ? {
              content: json(
                r.schema,
                name,
                r.contentTypes,
                status === '200' && RESPONSE_EXAMPLES[`${op.method} ${op.path}`] !== undefined ? { example: RESPONSE_EXAMPLES[`${op.method} ${op.path}`] } : {},
              ),
            }
          : r.textSchema
            ? { content: Object.fromEntries((r.contentTypes ?? ['text/plain']).map((t) => [t, { schema: r.textSchema }])) }
            : {}),
      }
    }
    const byStatus = new Map<number, RestErrorCode[]>()
    for (const e of [...op.errors, 'internal' as const, 'unavailable' as const]) {
      const [status, code] = errorStatus(e)
      byStatus.set(status, [...(byStatus.get(status) ?? []), code])
    }
    for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
      // The REST error body's examples; operations with a body of their own (GraphQL) keep theirs.
      const errorExamples = op.errorSchema
        ? {}
        : {
            examples: Object.fromEntries(
              codes.map((code) => [
                code,
                { summary: code, value: { status: 'error', error: { code, message: ERROR_EXAMPLES[code] }, server_time_ms: EXAMPLE_TIME_MS } },
              ]),
            ),
          }
      responses[status] = {
        description: `Error: ${codes.map((c) => `\`${c}\``).join(' or ')}.`,
        content: json(op.errorSchema ?? ErrorBody, 'Error', op.errorContentTypes, errorExamples),
      }
    }
    const params = [...parameters('path', op.params), ...parameters('query', op.query), ...parameters('header', op.headers)]
    const operation = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: op.tags,
      ...(op.security ? { security: op.security.map((s) => ({ [s]: [] })) } : {}),
      ...(params.length ? { parameters: params } : {}),
      ...(op.body
        ? {
            requestBody: {
              required: op.body.required,
              ...(op.body.description ? { description: op.body.description } : {}),
              content: json(op.body.schema, `${upperFirst(op.operationId)}Request`),
            },
          }
        : {}),
      responses,
    }
    paths[op.path] = { ...paths[op.path], [op.method.toLowerCase()]: operation }
  }

  const webhooks: Record<string, unknown> = {}
  for (const w of info.webhooks ?? []) {
    if (ids.has(w.operationId)) throw new Error(`Duplicate operationId ${w.operationId}`)
    ids.add(w.operationId)
    webhooks[w.name] = {
      post: {
        operationId: w.operationId,
        summary: w.summary,
        description: w.description,
        tags: ['Webhooks'],
        parameters: parameters('header', w.headers).map((p) => ({ ...p, required: true })),
        requestBody: { required: true, content: json(w.body, `${upperFirst(w.operationId)}Request`) },
        responses: {
          '2XX': { description: 'Received. Any other answer, a redirect, or none within 10 s is a failed attempt: retried with backoff for 24 h.' },
        },
      },
    }
  }

  const { schemas } = z.toJSONSchema(registry, { target: 'draft-2020-12', unrepresentable: 'throw', uri: (id) => `#/components/schemas/${id}` })
  // Each component is embedded in the document: no `$schema` (the dialect is OpenAPI 3.1's) and no `$id`.
  const componentSchemas = Object.fromEntries(
    Object.entries(schemas)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([id, { $schema: _s, $id: _i, ...schema }]) => [id, schema]),
  )
  const sortedPaths = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)))
  const usedTags = new Set(operations.flatMap((o) => o.tags))
  const usedSchemes = new Set(operations.flatMap((o) => o.security ?? []))

  return {
    openapi: '3.1.1',
    info: {
      title: 'vaultgate',
      version: info.version,
      summary: 'Investment-vault data and wallet API keys: REST routes over the GraphQL API.',
      ...(info.description ? { description: info.description } : {}),
      license: { name: 'MIT', identifier: 'MIT' },
    },
    tags: TAGS.filter((t) => usedTags.has(t.name)),
    paths: sortedPaths,
    ...(info.webhooks?.length ? { webhooks } : {}),
    components: {
      schemas: componentSchemas,
      securitySchemes: Object.fromEntries(Object.entries(SECURITY_SCHEMES).filter(([name]) => usedSchemes.has(name as SecurityScheme))),
    },
  }
}

export type OpenApiDocument = ReturnType<typeof buildOpenApiDocument>
