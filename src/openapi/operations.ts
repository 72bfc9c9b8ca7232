import { z } from 'zod'
import { TransactionStatus, TransactionType } from '../generated/prisma/enums.js'
import { EVM_ADDRESS } from '../wallets/address.js'
import { AllowlistNoteInput, VerifyApiKeyInput } from '../keys/inputs.js'
import { PAGE_SIZE } from '../core/page.js'
import { WebhookDeliveryStatus } from '../generated/prisma/enums.js'
import { choiceParam, limitParam, segmentParam, textParam, type Param } from '../rest/params.js'
import { restRoutes } from '../rest/routes/index.js'
import { Amount, component, envelope, Percent, ServerTime, Timestamp } from '../rest/wire.js'
import { VaultSchema } from '../rest/routes/vaults.js'
import { eventDataSchemas, WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../webhooks/events.js'
import { CreateEndpointInput } from '../webhooks/inputs.js'
import { DeliveryPageSchema, WebhookCreatedSchema, WebhookDeliverySchema, WebhookEndpointSchema } from '../webhooks/views.js'
import { buildOpenApiDocument, DATA_AS_OF_HEADER, RATE_LIMIT_HEADERS, restOperation, type OperationDoc, type WebhookDoc } from './document.js'

// The routes outside the REST shim (health, metrics, GraphQL, admin, internal) are plain Hono
// handlers, so their descriptions live here; test/openapi/openapi.test.ts checks that every route the app
// serves is described and that real answers match these schemas.

const GraphQLRequest = component(
  'GraphQLRequest',
  z.object({
    query: z
      .string()
      .optional()
      .meta({ description: 'A GraphQL document (or a `documentId` instead).', examples: ['{ vault(id: "usdc-prime") { id name tvl } }'] }),
    documentId: z.string().optional().meta({
      description: 'A trusted document of GRAPHQL_DOCUMENTS_FILE by its SHA-256, `sha256:<hex>` or the bare hex, instead of `query` (docs/graphql-clients.md).',
    }),
    variables: z.record(z.string(), z.unknown()).nullable().optional(),
    operationName: z.string().nullable().optional(),
    extensions: z.record(z.string(), z.unknown()).nullable().optional(),
  }),
)

const GraphQLResult = component(
  'GraphQLResult',
  z
    .object({
      data: z.record(z.string(), z.unknown()).nullable().optional(),
      errors: z
        .array(
          z.object({
            message: z.string(),
            locations: z.array(z.object({ line: z.int(), column: z.int() })).optional(),
            path: z.array(z.union([z.string(), z.int()])).optional(),
            extensions: z.object({ code: z.string() }).catchall(z.unknown()).meta({ description: '`code` is one of the REST error codes.' }),
          }),
        )
        .optional(),
      extensions: z
        .object({
          cost: z
            .object({ requested: z.int(), limit: z.int() })
            .meta({ description: "The operation's estimated cost and GRAPHQL_MAX_COST, on every answer of an operation that ran." }),
        })
        .catchall(z.unknown())
        .optional(),
    })
    .meta({ description: 'A GraphQL execution result; errors carry `extensions.code` with the REST error codes.' }),
)

const ImportVault = VaultSchema.extend({
  base_asset_price_usd: Amount.nullable().optional().meta({ description: 'USD price of one base-asset unit; null (or left out) when unknown.' }),
})
const ImportDocument = component(
  'ImportDocument',
  z
    .object({
      vaults: z.array(ImportVault).optional(),
      compositions: z
        .array(
          z.object({
            vault_id: z.string(),
            as_of: z.string().meta({ description: 'An RFC 3339 timestamp.' }),
            positions: z.array(
              z.object({ platform: z.string(), asset: z.string(), symbol: z.string(), pct: Percent, apy_est_pct: z.number(), icon: z.string() }),
            ),
          }),
        )
        .optional(),
      vault_snapshots: z
        .array(
          z.object({
            vault_id: z.string(),
            as_of: z.string().meta({ description: 'An RFC 3339 timestamp.' }),
            share_price: Amount,
            tvl: Amount,
            base_asset_price_usd: Amount.nullable().optional().meta({ description: 'Null (or left out) when unknown.' }),
          }),
        )
        .optional()
        .meta({ description: "Observations of a vault's live values; the newest becomes the vault's tvl, share_price and USD price." }),
      transactions: z
        .array(
          z.object({
            id: z.string(),
            vault_id: z.string(),
            address: z.string().meta({ description: 'An EVM address, any case.' }),
            type: z.enum(TransactionType),
            status: z.enum(TransactionStatus),
            amount: Amount,
            shares: Amount,
            timestamp: z.string().meta({ description: 'An RFC 3339 timestamp.' }),
            completed_at: z.string().nullable().meta({ description: 'An RFC 3339 timestamp; null while pending.' }),
            tx_hash: z.string(),
          }),
        )
        .optional(),
    })
    .meta({
      description:
        'Vaults in the REST wire shape plus base_asset_price_usd (nullable fields may be left out), composition snapshots, vault snapshots, and transactions with address, shares and completed_at. Validated whole before anything is written; the same ids (snapshots: the same vault and as_of) imported again update in place. A vault record whose live values differ from its newest snapshot records a snapshot at the import time.',
    }),
)

const ImportCounts = z
  .object({ vaults: z.int(), compositions: z.int(), vault_snapshots: z.int(), transactions: z.int() })
  .meta({ description: 'Rows written (inserted or updated) per kind.' })

const walletParam: Param<string> = {
  description: 'A wallet address: 0x and 40 hex digits, any case (stored lowercase).',
  schema: { type: 'string', pattern: EVM_ADDRESS.source },
  example: '0x8ba1f109551bd432803012645ac136ddd64dba72',
  parse: (text) => text ?? '',
}
const AllowlistEntry = component(
  'AllowlistEntry',
  z.object({
    address: z.string(),
    note: z.string().nullable(),
    createdAtMs: z.int().min(0).meta({ description: 'When the address was added, Unix time in milliseconds.' }),
  }),
)
const admin = { tags: ['Admin'], security: ['adminToken' as const] }
// rate_limited: a client IP past RATE_LIMIT_BEARER_FAILURES_PER_MINUTE wrong tokens (src/http/middleware/bearer.ts).
const adminErrors = ['unauthorized', 'rate_limited', { code: 'not_found' as const, status: 404 }] as const

// Webhooks (decisions.md §11). The query parameters are read by the routes with these very
// definitions (src/http/routes/webhooks.ts).
export const deliveriesQuery = {
  limit: limitParam(PAGE_SIZE, `Deliveries per page, ${PAGE_SIZE.min} to ${PAGE_SIZE.max}.`),
  cursor: textParam("The previous page's `next_cursor`, exactly as received."),
  status: choiceParam(Object.values(WebhookDeliveryStatus), 'Only deliveries in this state.'),
}
export const replayEventQuery = {
  endpoint_id: textParam('Replay to this endpoint only (it must be live and subscribed to the event); every subscribed live endpoint otherwise.'),
}
const webhookId = segmentParam('The endpoint id (a UUID).', '3f0c6f0e-2a41-4d0e-9b0a-6c8e1d1f2a3b')
const WebhookEndpoint = component('WebhookEndpoint', WebhookEndpointSchema)
const WebhookDelivery = component('WebhookDelivery', WebhookDeliverySchema)
const WebhookEndpointInput = component('WebhookEndpointInput', CreateEndpointInput)
const NO_STORE_HEADER = { 'Cache-Control': { description: 'Always `no-store`.', schema: { type: 'string', const: 'no-store' } } }
const webhookAdmin = { ...admin, tags: ['Webhooks'] }

const text = (contentType: string) => ({ contentTypes: [contentType], textSchema: { type: 'string' } })
// Yoga answers in the GraphQL-over-HTTP media type when the client accepts it, else in plain JSON.
const GRAPHQL_TYPES = ['application/graphql-response+json', 'application/json']

/** Routes outside the shim. */
export const httpOperations: OperationDoc[] = [
  {
    method: 'GET',
    path: '/healthz',
    operationId: 'health',
    summary: 'Liveness',
    description: 'The process is up; says nothing about the database.',
    tags: ['Operations'],
    errors: [],
    responses: { 200: { description: 'Up.', schema: component('Health', z.object({ status: z.literal('ok'), server_time_ms: ServerTime })) } },
  },
  {
    method: 'GET',
    path: '/readyz',
    operationId: 'readiness',
    summary: 'Readiness',
    description:
      "The database answers and the migrations are applied; 503 `unavailable` otherwise. With DATABASE_REPLICA_URLS, each read replica's state (a lagging or failed replica never makes the gateway unready while the primary serves).",
    tags: ['Operations'],
    errors: [],
    responses: {
      200: {
        description: 'Ready to serve.',
        schema: component(
          'Readiness',
          envelope(
            z.object({
              storage: z.enum(['embedded', 'postgres']),
              migrations: z.literal('applied'),
              replicas: z
                .array(
                  z.object({
                    name: z.string().describe('host:port of the replica.'),
                    state: z.enum(['up', 'lagging', 'down']).describe('up: reads go to it; lagging: behind by more than REPLICA_MAX_LAG_MS; down: it failed.'),
                    lag_ms: z
                      .number()
                      .int()
                      .nullable()
                      .describe('How far behind the primary its data may be (0: it had replayed all the primary had); null before it answered a poll.'),
                    replay_lsn: z.string().nullable().describe('pg_last_wal_replay_lsn() at the last poll.'),
                    last_replay_at_ms: z.number().int().nullable().describe('Commit time of the last transaction it replayed (Unix ms).'),
                    error: z.string().optional().describe('Why it is down.'),
                  }),
                )
                .optional()
                .describe('Only with DATABASE_REPLICA_URLS.'),
            }),
          ),
        ),
      },
    },
  },
  {
    method: 'GET',
    path: '/metrics',
    operationId: 'metrics',
    summary: 'Prometheus metrics',
    description:
      'Prometheus text exposition: requests and latency by route pattern, GraphQL operations by name, errors by code, SQL latency, PostgreSQL pool, cache lookups, API-key verifications by result, process metrics.',
    tags: ['Operations'],
    errors: [],
    responses: { 200: { description: 'Metrics in the Prometheus text format.', ...text('text/plain') } },
  },
  {
    method: 'POST',
    path: '/graphql',
    operationId: 'graphql',
    summary: 'Run a GraphQL operation',
    description:
      'The GraphQL API every REST route is built on (schema: schema.graphql, or introspection). `GET /graphql` takes the same fields as query parameters, and opens GraphiQL in a browser.',
    tags: ['GraphQL'],
    errors: [],
    body: { schema: GraphQLRequest, required: true },
    responses: {
      200: {
        description: 'The result; resolver errors are in `errors` with `extensions.code`.',
        schema: GraphQLResult,
        contentTypes: GRAPHQL_TYPES,
        // Data-As-Of on queries (not mutations, not key management).
        headers: { ...RATE_LIMIT_HEADERS, ...DATA_AS_OF_HEADER },
      },
      400: {
        description: 'A document that does not parse or validate (`bad_request`); with `Accept: application/json` this is a 200.',
        schema: GraphQLResult,
        contentTypes: GRAPHQL_TYPES,
      },
    },
    errorSchema: GraphQLResult,
    errorContentTypes: GRAPHQL_TYPES,
  },
  {
    method: 'POST',
    path: '/admin/import',
    operationId: 'adminImport',
    summary: 'Load vaults, compositions and transactions',
    description:
      'Bulk load in one transaction (also `vaultgate import FILE`). An invalid document is rejected whole; the message names the offending paths (a key given twice in an object, too). The body is JSON (`Content-Type: application/json`), as is or with `Content-Encoding: gzip`, at most 256 MiB before and after inflating.',
    tags: ['Admin'],
    security: ['adminToken'],
    errors: ['bad_request', 'payload_too_large', 'unsupported_media_type', ...adminErrors],
    body: { schema: ImportDocument, required: true },
    responses: { 200: { description: 'Rows written.', schema: component('ImportResult', envelope(ImportCounts)) } },
  },
  {
    ...admin,
    method: 'GET',
    path: '/admin/allowlist',
    operationId: 'adminListAllowlist',
    summary: 'List the allowlist',
    description: 'The wallets that may hold API keys (also `vaultgate allowlist list`).',
    errors: [...adminErrors],
    responses: { 200: { description: 'Every entry.', schema: component('AllowlistList', envelope(z.object({ items: z.array(AllowlistEntry) }))) } },
  },
  {
    ...admin,
    method: 'PUT',
    path: '/admin/allowlist/{address}',
    operationId: 'adminAddToAllowlist',
    summary: 'Add a wallet to the allowlist',
    description: 'Idempotent; an existing entry keeps its date and takes the new note when one is given.',
    params: { address: walletParam },
    body: { schema: component('AllowlistNote', AllowlistNoteInput), required: false },
    errors: ['bad_request', ...adminErrors],
    responses: {
      200: {
        description: 'The entry; `added` is false when it was there already.',
        schema: component('AllowlistAdded', envelope(AllowlistEntry.extend({ added: z.boolean() }))),
      },
    },
  },
  {
    ...admin,
    method: 'DELETE',
    path: '/admin/allowlist/{address}',
    operationId: 'adminRemoveFromAllowlist',
    summary: 'Remove a wallet from the allowlist',
    description: "Removes the entry and, in the same transaction, revokes the wallet's API key; verifications see it at once.",
    params: { address: walletParam },
    errors: ['bad_request', ...adminErrors],
    responses: {
      200: {
        description: '`removed` is false when the address was not listed; `revokedKeyId` names the key revoked with it.',
        schema: component('AllowlistRemoved', envelope(z.object({ address: z.string(), removed: z.boolean(), revokedKeyId: z.string().nullable() }))),
      },
    },
  },
  {
    ...webhookAdmin,
    method: 'POST',
    path: '/admin/webhooks',
    operationId: 'adminCreateWebhook',
    summary: 'Register a webhook endpoint',
    description:
      'Events of the given types (and vaults) are POSTed to `url`, signed per Standard Webhooks with the `whsec_…` secret returned here, once (also `vaultgate webhooks add`).',
    body: { schema: WebhookEndpointInput, required: true },
    errors: ['bad_request', ...adminErrors],
    responses: {
      201: {
        description: 'The endpoint and its signing secret (shown only now).',
        schema: component('WebhookCreated', envelope(WebhookCreatedSchema)),
        headers: NO_STORE_HEADER,
      },
    },
  },
  {
    ...webhookAdmin,
    method: 'GET',
    path: '/admin/webhooks',
    operationId: 'adminListWebhooks',
    summary: 'List the webhook endpoints',
    description: 'Every endpoint, oldest first (also `vaultgate webhooks list`). Secrets are never shown again.',
    errors: [...adminErrors],
    responses: {
      200: {
        description: 'Every endpoint.',
        schema: component('WebhookList', envelope(z.object({ items: z.array(WebhookEndpoint) }))),
        headers: NO_STORE_HEADER,
      },
    },
  },
  {
    ...webhookAdmin,
    method: 'GET',
    path: '/admin/webhooks/{id}',
    operationId: 'adminGetWebhook',
    summary: 'One webhook endpoint',
    description: 'The endpoint; 404 for an unknown id.',
    params: { id: webhookId },
    errors: [...adminErrors],
    responses: { 200: { description: 'The endpoint.', schema: component('WebhookResult', envelope(WebhookEndpoint)), headers: NO_STORE_HEADER } },
  },
  {
    ...webhookAdmin,
    method: 'DELETE',
    path: '/admin/webhooks/{id}',
    operationId: 'adminDeleteWebhook',
    summary: 'Delete a webhook endpoint',
    description:
      'Deletes the endpoint with its deliveries and their attempts (also `vaultgate webhooks remove`); an attempt in flight finishes but is not recorded. 404 for an unknown id.',
    params: { id: webhookId },
    errors: [...adminErrors],
    responses: {
      200: {
        description: 'Deleted.',
        schema: component('WebhookDeleted', envelope(z.object({ id: z.string(), deleted: z.literal(true) }))),
        headers: NO_STORE_HEADER,
      },
    },
  },
  {
    ...webhookAdmin,
    method: 'GET',
    path: '/admin/webhooks/{id}/deliveries',
    operationId: 'adminListWebhookDeliveries',
    summary: "An endpoint's deliveries with their attempts",
    description:
      'Newest first, cursor-paged: each delivery (one event for this endpoint) with its state, next attempt and every attempt made (status code, error, the start of the answer). Also `vaultgate webhooks deliveries`.',
    params: { id: webhookId },
    query: deliveriesQuery,
    errors: ['bad_request', ...adminErrors],
    responses: { 200: { description: 'One page.', schema: component('WebhookDeliveryPage', envelope(DeliveryPageSchema)), headers: NO_STORE_HEADER } },
  },
  {
    ...webhookAdmin,
    method: 'POST',
    path: '/admin/webhooks/{id}/deliveries/{delivery_id}/replay',
    operationId: 'adminReplayWebhookDelivery',
    summary: 'Send a delivery again',
    description:
      'A finished delivery (succeeded or dead) becomes pending, due now, with a fresh 24 h retry window; a pending one is made due now; one in flight is left alone. The receiver sees the same `webhook-id`.',
    params: { id: webhookId, delivery_id: segmentParam('The delivery id (a UUID).') },
    errors: [...adminErrors],
    responses: {
      200: { description: 'The delivery as it is now.', schema: component('WebhookDeliveryResult', envelope(WebhookDelivery)), headers: NO_STORE_HEADER },
    },
  },
  {
    ...webhookAdmin,
    method: 'POST',
    path: '/admin/webhooks/events/{event_id}/replay',
    operationId: 'adminReplayWebhookEvent',
    summary: 'Send an event again',
    description:
      'Every live endpoint subscribed to the event (or only `endpoint_id`) gets a pending delivery due now: its existing delivery is reset (one in flight is left alone), or a new one is made for an endpoint registered since. 400 when `endpoint_id` is disabled or not subscribed to the event.',
    params: { event_id: segmentParam('The event id (the `webhook-id` receivers saw).') },
    query: replayEventQuery,
    errors: ['bad_request', ...adminErrors],
    responses: {
      200: {
        description: 'How many deliveries were made due.',
        schema: component('WebhookReplayResult', envelope(z.object({ deliveries: z.int().min(0) }))),
        headers: NO_STORE_HEADER,
      },
    },
  },
  {
    method: 'POST',
    path: '/internal/v1/apiKey/verify',
    operationId: 'verifyApiKey',
    summary: 'Verify an API key (order exchange)',
    description:
      'Whether a presented key is active, and for which wallet. State is at most 30 s old (revocations on this or another instance apply at once). A key with `allowedCidrs` is refused (`ip_not_allowed`) when `clientIp` is outside them or missing. Each key may be verified RATE_LIMIT_VERIFY_PER_MINUTE times a minute (429 past that). When key state cannot be read the answer is 503: refuse the key.',
    tags: ['Internal'],
    security: ['internalToken'],
    body: {
      schema: component('VerifyApiKeyRequest', VerifyApiKeyInput),
      required: true,
    },
    // rate_limited: RATE_LIMIT_VERIFY_PER_MINUTE per key, or too many wrong tokens from the address.
    errors: ['bad_request', 'unauthorized', 'rate_limited', { code: 'not_found', status: 404 }],
    responses: {
      200: {
        description: 'The verdict; `reason` says why an inactive key is inactive.',
        schema: component(
          'ApiKeyVerdict',
          envelope(
            z.object({
              active: z.boolean(),
              wallet: z.string().nullable(),
              keyId: z.string().nullable(),
              expiresAtMs: z.int().nullable(),
              expiresInMs: z.int().min(0).nullable().meta({ description: 'Milliseconds until the key expires (0 once it has); null for an unknown key.' }),
              reason: z.enum(['unknown', 'revoked', 'expired', 'not_whitelisted', 'ip_not_allowed']).nullable().meta({ description: 'Null when active.' }),
              rateLimit: z
                .object({
                  limit: z.int().min(1).meta({ description: 'Verifications of this key allowed per minute.' }),
                  remaining: z.int().min(0).meta({ description: 'Left in the current minute, this one counted.' }),
                  resetMs: z.int().min(0).meta({ description: 'Milliseconds until the window resets.' }),
                })
                .nullable()
                .meta({ description: "The key's verification budget after this call; null when RATE_LIMIT_VERIFY_PER_MINUTE is 0." }),
            }),
          ),
        ),
        headers: {
          'Key-Expires-Soon': {
            description: 'On an active key in its last 3 days: the milliseconds it has left (`expiresInMs`). Absent otherwise.',
            schema: { type: 'string', pattern: '^[0-9]+$' },
          },
          'Cache-Control': { description: 'Always `no-store`.', schema: { type: 'string', const: 'no-store' } },
        },
      },
    },
  },
]

const EVENT_DOCS: Record<WebhookEventType, { component: string; summary: string; description: string }> = {
  'vault.updated': {
    component: 'VaultUpdatedEvent',
    summary: "A vault's values or composition changed",
    description:
      "One per vault per data change (an import): `changes` lists `values` when the vault's record (live values, status, constraints, metadata) is new or differs, `composition` when a composition snapshot is new or its allocations differ. An import that changes nothing sends nothing.",
  },
  'transaction.created': {
    component: 'TransactionCreatedEvent',
    summary: 'A transaction was seen for the first time',
    description: 'The transaction as stored, with its owner `address`, `shares` and `completed_at`.',
  },
  'transaction.status_changed': {
    component: 'TransactionStatusChangedEvent',
    summary: "A known transaction's status changed",
    description: 'The transaction as it is now, with `previous_status`.',
  },
  'redeem.claimable': {
    component: 'RedeemClaimableEvent',
    summary: 'A redeem became claimable',
    description:
      'A `redeem` transaction reached `claimable` (its assets are ready to claim: ERC-7540 `claimableRedeemRequest` > 0, or an import), by a status change or first seen claimable; sent in addition to `transaction.status_changed` / `transaction.created`.',
  },
  'redeem.completed': {
    component: 'RedeemCompletedEvent',
    summary: 'A redeem completed',
    description:
      'A `redeem` transaction reached `completed`, by a status change or first seen completed; sent in addition to `transaction.status_changed` / `transaction.created`.',
  },
  'transaction.removed': {
    component: 'TransactionRemovedEvent',
    summary: 'A chain reorg took a transaction back',
    description:
      'A transaction the chain source recorded is no longer on the chain (a reorg deeper than the confirmations replaced its block): it was deleted, and is sent as it was. If the new chain holds it again, it comes back as a new `transaction.created` (with a new id).',
  },
}

const signatureHeaders: Param<string>['parse'] = (text) => text ?? ''
const WEBHOOK_HEADERS = {
  'webhook-id': {
    description:
      "The event id: the same on every retry and replay of the event, and, for a transaction's events, for the same change recorded again (derived from the transaction, the event type and the status change); deduplicate on it.",
    schema: { type: 'string' },
    parse: signatureHeaders,
  },
  'webhook-timestamp': {
    description: 'When this attempt was signed, Unix time in seconds.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
    parse: signatureHeaders,
  },
  'webhook-signature': {
    description:
      'Space-separated `v1,<base64 HMAC-SHA256>` signatures of `{webhook-id}.{webhook-timestamp}.{body}` with the endpoint secret (Standard Webhooks).',
    schema: { type: 'string' },
    parse: signatureHeaders,
  },
}

/** The events POSTed to webhook endpoints (src/webhooks/events.ts holds their `data` schemas). */
export const webhookDocs: WebhookDoc[] = WEBHOOK_EVENT_TYPES.map((type) => {
  const doc = EVENT_DOCS[type]
  return {
    name: type,
    operationId: `${type.replace(/[._](\w)/g, (_, c: string) => c.toUpperCase())}Webhook`,
    summary: doc.summary,
    description: doc.description,
    headers: WEBHOOK_HEADERS,
    body: component(
      doc.component,
      z.object({
        type: z.literal(type),
        timestamp: Timestamp.meta({ description: 'When the event was written (its change committed).' }),
        data: eventDataSchemas[type],
      }),
    ),
  }
})

/** Every documented operation: the shim's routes under /v1 and the routes above. */
export function apiOperations(): OperationDoc[] {
  return [...restRoutes.map((r) => restOperation(r)), ...httpOperations]
}

export const API_DESCRIPTION = `Read-only data about investment vaults (metadata, composition, composition series) and wallets, plus the
API-key management of the order-exchange interface.

Every REST route runs a fixed GraphQL operation through the same pipeline as \`/graphql\`. Amounts are
exact decimal strings; timestamps are RFC 3339 UTC with milliseconds; every error has one body,
\`{"status":"error","error":{"code","message"},"server_time_ms"}\`.`

/** The document served at /openapi.json. */
export function openApiDocument(version: string) {
  return buildOpenApiDocument(apiOperations(), { version, description: API_DESCRIPTION, webhooks: webhookDocs })
}
