import type { ResultOf, VariablesOf } from '@graphql-typed-document-node/core'
import { graphql } from './gql'

// A dashboard's vault card, typed by GraphQL Code Generator (codegen.ts) and sent by its trusted
// document id: the gateway serves it from GRAPHQL_DOCUMENTS_FILE (docs/graphql-clients.md).

export const VaultCard = graphql(`
  query VaultCard($id: ID!) {
    vault(id: $id) {
      id
      name
      status
      tvl
      tvlUsd
      composition {
        asOf
      }
    }
  }
`)

type Card = NonNullable<ResultOf<typeof VaultCard>['vault']>

/** The scalars come out as their wire types: a Decimal is a string (exact), never `unknown`. */
export const tvlOf = (card: Card): string => card.tvl
export const tvlUsdOf = (card: Card): string | null => card.tvlUsd ?? null
export const statusOf = (card: Card): 'active' | 'paused' | 'closed' => card.status
export const asOfOf = (card: Card): string | null => card.composition?.asOf ?? null

/** POST /graphql with the document's id instead of its text. */
export async function fetchVaultCard(base: string, variables: VariablesOf<typeof VaultCard>): Promise<ResultOf<typeof VaultCard>> {
  const documentId = (VaultCard as unknown as { __meta__?: { hash?: string } }).__meta__?.hash
  const res = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ documentId, variables }),
  })
  const body = (await res.json()) as { data?: ResultOf<typeof VaultCard>; errors?: { message: string }[] }
  if (!body.data) throw new Error(body.errors?.[0]?.message ?? `HTTP ${res.status}`)
  return body.data
}
