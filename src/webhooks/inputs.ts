import { z } from 'zod'
import type { DescribeIssue } from '../core/input.js'
import { WEBHOOK_EVENT_TYPES } from './events.js'

// The body of `POST /admin/webhooks` (and `vaultgate webhooks add`), declared once
// (src/core/input.ts): the service parses with it, the OpenAPI document shows it as WebhookEndpointInput.

const MAX_VAULT_IDS = 100

export const CreateEndpointInput = z.strictObject({
  url: z.string().min(1).max(2048).meta({
    description: 'Where events are POSTed: https (http too unless NODE_ENV=production), resolving to public addresses unless WEBHOOK_ALLOW_PRIVATE=true.',
  }),
  event_types: z.array(z.enum(WEBHOOK_EVENT_TYPES)).min(1, 'must name at least one event type'),
  vault_ids: z
    .array(z.string().min(1).max(200))
    .min(1, 'must name at least one vault (leave it out for every vault)')
    .max(MAX_VAULT_IDS)
    .nullable()
    .optional()
    .meta({ description: 'Only events of these vaults; leave it out (or null) for every vault.' }),
})

/** `path: what is wrong` (`event_types[0]: must be one of …`): the webhook routes' and CLI's messages name the field by its path. */
export const describeEndpointIssue: DescribeIssue = (issue) => {
  const path = issue.path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('')
  if (issue.code === 'unrecognized_keys') return `${issue.keys.join(', ')}: is not a known field (url, event_types, vault_ids)`
  if (issue.code === 'invalid_value' && path.startsWith('event_types')) return `${path}: must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}`
  if (issue.code === 'invalid_type')
    return `${path || 'body'}: ${issue.input === undefined ? 'is required' : `must be ${issue.expected === 'array' ? 'an array' : issue.expected === 'object' ? 'a JSON object' : `a ${issue.expected}`}`}`
  return `${path}: ${issue.message}`
}
