import { z } from 'zod'
import { TimestampString } from '../core/formats.js'
import { WebhookDeliveryStatus } from '../generated/prisma/enums.js'
import { WEBHOOK_EVENT_TYPES } from './events.js'

// The admin answers about webhooks (the routes under /admin/webhooks and the CLI print them), as
// zod schemas: the service's return types are inferred from them, and the OpenAPI document
// converts the same schemas, so the reference cannot drift from what the service answers.

const Uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)

export const WebhookEndpointSchema = z.object({
  id: Uuid,
  url: z.string(),
  event_types: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
  vault_ids: z.array(z.string()).nullable().meta({ description: 'The vaults whose events it receives; null: every vault.' }),
  created_at: TimestampString,
  disabled_at: TimestampString.nullable().meta({ description: 'Set while the endpoint is switched off (nothing is created or sent for it).' }),
})
export type WebhookEndpointView = z.infer<typeof WebhookEndpointSchema>

export const WebhookCreatedSchema = WebhookEndpointSchema.extend({
  secret: z
    .string()
    .regex(/^whsec_[A-Za-z0-9+/]+=*$/)
    .meta({ description: 'The `whsec_…` signing secret. Shown only in this answer: store it with the receiver.' }),
})

export const WebhookAttemptSchema = z.object({
  attempt: z.int().min(1),
  started_at: TimestampString,
  duration_ms: z.int().min(0),
  status_code: z.int().nullable().meta({ description: "The receiver's HTTP status; null when no answer arrived." }),
  error: z.string().nullable().meta({ description: 'Why the attempt failed (a status, a timeout, a refused address, a redirect); null on success.' }),
  response_body: z.string().nullable().meta({ description: "The first 1 KiB of the receiver's answer." }),
})
export type WebhookAttemptView = z.infer<typeof WebhookAttemptSchema>

export const WebhookDeliverySchema = z.object({
  id: Uuid,
  event_id: Uuid.meta({ description: 'The `webhook-id` header of every attempt.' }),
  event_type: z.enum(WEBHOOK_EVENT_TYPES),
  vault_id: z.string(),
  status: z.enum(WebhookDeliveryStatus),
  attempt_count: z.int().min(0),
  next_attempt_at: TimestampString.nullable().meta({ description: 'When the next attempt is due; null unless pending.' }),
  retry_until: TimestampString.meta({ description: 'Retries stop at this time (24 h after creation or the last replay); a failure after it is final (dead).' }),
  last_status_code: z.int().nullable(),
  last_error: z.string().nullable(),
  created_at: TimestampString,
  updated_at: TimestampString,
  succeeded_at: TimestampString.nullable(),
  dead_at: TimestampString.nullable(),
  attempts: z.array(WebhookAttemptSchema).meta({ description: 'Every attempt, oldest first.' }),
})
export type WebhookDeliveryView = z.infer<typeof WebhookDeliverySchema>

export const DeliveryPageSchema = z.object({
  items: z.array(WebhookDeliverySchema).meta({ description: 'Newest first.' }),
  next_cursor: z.string().nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
})
export type DeliveryPage = z.infer<typeof DeliveryPageSchema>
