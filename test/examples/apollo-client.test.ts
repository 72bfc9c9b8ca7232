import { createHash } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { ApolloClient, ApolloLink, CombinedGraphQLErrors, HttpLink, InMemoryCache, gql } from '@apollo/client'
import { Defer20220824Handler } from '@apollo/client/incremental'
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries'
import { GraphQLWsLink } from '@apollo/client/link/subscriptions'
import { getMainDefinition } from '@apollo/client/utilities'
import { createClient } from 'graphql-ws'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { eventually } from '../support/eventually.js'
import { insertVault } from '../support/fixtures.js'
import { listen, liveVault } from '../support/live.js'

// Issue 28 / decisions §15: the setups of docs/graphql-clients.md run through Apollo Client 4
// itself in Node, against a real gateway on a socket: the persisted query link (APQ, by POST and
// by GET), GRAPHQL_TRUSTED_ONLY as Apollo surfaces it, a subscription through GraphQLWsLink
// (graphql-ws), and an @defer query answered as multipart/mixed. test/graphql/documents.test.ts
// speaks the same protocols by hand; this file checks that the real client agrees with them.

const ADMIN = 'admin-token-for-apollo-tests-0123456789abcdef'
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

/** What the gateway was sent and answered, seen through the fetch handed to HttpLink. */
interface Seen {
  method: string
  /** Whether the request carried the document itself (APQ's second try) or only its hash. */
  withQuery: boolean
  hash: string | undefined
  /** The request's Accept header, and a GET's parameter names. */
  accept: string | null
  parameters: string[]
  status: number
  cacheControl: string | null
  etag: string | null
  contentType: string | null
}

function recordingFetch(seen: Seen[]): typeof fetch {
  return async (input, init) => {
    const url = new URL(String(input))
    const method = init?.method ?? 'GET'
    const params =
      method === 'GET'
        ? { query: url.searchParams.get('query') ?? undefined, extensions: JSON.parse(url.searchParams.get('extensions') ?? '{}') }
        : JSON.parse(String(init?.body))
    const res = await fetch(input, init)
    seen.push({
      method,
      withQuery: typeof params.query === 'string',
      hash: params.extensions?.persistedQuery?.sha256Hash,
      accept: new Headers(init?.headers).get('accept'),
      parameters: [...url.searchParams.keys()],
      status: res.status,
      cacheControl: res.headers.get('cache-control'),
      etag: res.headers.get('etag'),
      contentType: res.headers.get('content-type'),
    })
    return res
  }
}

// The setup of docs/graphql-clients.md "Apollo Client 4 with APQ", with the recording fetch.
function apqClient(base: string, seen: Seen[], useGETForHashedQueries = false) {
  const persisted = new PersistedQueryLink({ sha256, useGETForHashedQueries })
  return new ApolloClient({
    cache: new InMemoryCache(),
    link: persisted.concat(new HttpLink({ uri: `${base}/graphql`, fetch: recordingFetch(seen) })),
  })
}

const VAULT_CARD = gql`
  query VaultCard($id: ID!) {
    vault(id: $id) {
      id
      name
      tvl
    }
  }
`

describe(`Apollo Client 4 against the gateway (${testBackend})`, () => {
  let t: TestApp
  let base: string
  let stop: () => Promise<void>
  const clients: ApolloClient[] = []
  beforeAll(async () => {
    t = await createTestApp({ ADMIN_TOKEN: ADMIN, RESPONSE_CACHE_TTL_MS: '60000' })
    ;({ base, stop } = await listen(t.app))
    await insertVault(t.db.prisma, 'apollo-1', { name: 'Apollo One', tvl: '12.5', status: 'paused' })
    await insertVault(t.db.prisma, 'apollo-live')
    await insertVault(t.db.prisma, 'apollo-2', { name: 'Apollo Two', status: 'paused', sharePrice: '1.25' })
  })
  afterEach(() => {
    for (const c of clients.splice(0)) c.stop()
  })
  afterAll(async () => {
    await stop()
    await t.close()
  })

  it('APQ by POST: the hash alone first, PersistedQueryNotFound, the query once, then the hash alone', async () => {
    const seen: Seen[] = []
    const client = apqClient(base, seen)
    clients.push(client)
    const expected = { vault: { __typename: 'Vault', id: 'apollo-1', name: 'Apollo One', tvl: '12.5' } }
    for (let i = 0; i < 3; i++) {
      // network-only: each read reaches the gateway instead of Apollo's cache.
      const { data } = await client.query({ query: VAULT_CARD, variables: { id: 'apollo-1' }, fetchPolicy: 'network-only' })
      expect(data).toEqual(expected)
    }
    const hash = seen[0]?.hash
    expect(hash).toMatch(/^[0-9a-f]{64}$/)
    expect(seen.map(({ method, withQuery, hash: h, status }) => ({ method, withQuery, sameHash: h === hash, status }))).toEqual([
      { method: 'POST', withQuery: false, sameHash: true, status: 404 },
      { method: 'POST', withQuery: true, sameHash: true, status: 200 },
      { method: 'POST', withQuery: false, sameHash: true, status: 200 },
      { method: 'POST', withQuery: false, sameHash: true, status: 200 },
    ])
  })

  it('APQ by GET (useGETForHashedQueries): the hash-only answer is cacheable like a REST read', async () => {
    const seen: Seen[] = []
    const client = apqClient(base, seen, true)
    clients.push(client)
    const query = gql`
      query VaultName($id: ID!) {
        vault(id: $id) {
          id
          name
        }
      }
    `
    for (let i = 0; i < 2; i++) {
      const { data } = await client.query({ query, variables: { id: 'apollo-1' }, fetchPolicy: 'network-only' })
      expect(data).toEqual({ vault: { __typename: 'Vault', id: 'apollo-1', name: 'Apollo One' } })
    }
    // Unknown at first: the query then goes by POST (Apollo never puts a whole query in a URL).
    expect(seen.map(({ method, withQuery, status }) => ({ method, withQuery, status }))).toEqual([
      { method: 'GET', withQuery: false, status: 404 },
      { method: 'POST', withQuery: true, status: 200 },
      { method: 'GET', withQuery: false, status: 200 },
    ])
    const get = seen[2]!
    expect(get.parameters).toEqual(['operationName', 'variables', 'extensions'])
    expect({ cacheControl: get.cacheControl, contentType: get.contentType }).toEqual({
      cacheControl: 'public, max-age=10',
      contentType: 'application/graphql-response+json; charset=utf-8',
    })
    expect(get.etag).toMatch(/^W\/"[\w-]{27}"$/)
  })

  const importVault = async (fields: Record<string, unknown>) => {
    const res = await fetch(`${base}/admin/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ vaults: [liveVault('apollo-live', fields)] }),
    })
    expect(res.status).toBe(200)
  }
  const released = () =>
    eventually(() => t.app.subscriptions.open === 0 && t.app.subscriptions.sockets === 0, {
      timeoutMs: 5000,
      intervalMs: 10,
      what: 'the subscription and its socket gone',
    })

  it("a subscription through graphql-ws' own client (the global WebSocket) receives the vault after an import", async () => {
    // The plain setup of docs/graphql-clients.md "WebSocket subscriptions".
    const client = createClient({ url: `${base.replace(/^http/, 'ws')}/graphql` })
    const events: unknown[] = []
    const failures: unknown[] = []
    const unsubscribe = client.subscribe(
      { query: 'subscription VaultLive($id: ID!) { vaultUpdated(id: $id) { id tvl } }', variables: { id: 'apollo-live' } },
      { next: (result) => events.push(result), error: (e) => failures.push(e), complete: () => {} },
    )
    try {
      await eventually(() => t.app.subscriptions.listeners === 1, { timeoutMs: 5000, intervalMs: 10, what: 'the subscription registered' })
      await importVault({ tvl: '41.5' })
      await eventually(() => events.length > 0 || failures.length > 0, { timeoutMs: 5000, intervalMs: 10, what: 'an event' })
      expect({ events, failures }).toEqual({ events: [{ data: { vaultUpdated: { id: 'apollo-live', tvl: '41.5' } } }], failures: [] })
    } finally {
      unsubscribe()
      await client.dispose()
    }
    await released()
  })

  it('a subscription through GraphQLWsLink (graphql-ws) receives the vault after an import', async () => {
    // The split setup of docs/graphql-clients.md "WebSocket subscriptions": subscriptions over the WebSocket, the rest over HTTP.
    const ws = createClient({ url: `${base.replace(/^http/, 'ws')}/graphql` })
    const link = ApolloLink.split(
      ({ query }) => {
        const definition = getMainDefinition(query)
        return definition.kind === 'OperationDefinition' && definition.operation === 'subscription'
      },
      new GraphQLWsLink(ws),
      new HttpLink({ uri: `${base}/graphql` }),
    )
    const client = new ApolloClient({ cache: new InMemoryCache(), link })
    clients.push(client)
    const events: unknown[] = []
    const failures: unknown[] = []
    const subscription = client
      .subscribe({
        query: gql`
          subscription VaultLive($id: ID!) {
            vaultUpdated(id: $id) {
              id
              tvl
            }
          }
        `,
        variables: { id: 'apollo-live' },
      })
      .subscribe({ next: (result) => events.push(result), error: (e) => failures.push(e) })
    try {
      await eventually(() => t.app.subscriptions.listeners === 1, { timeoutMs: 5000, intervalMs: 10, what: 'the subscription registered' })
      expect(t.app.subscriptions.sockets).toBe(1)
      await importVault({ tvl: '99.5' })
      await eventually(() => events.length > 0 || failures.length > 0, { timeoutMs: 5000, intervalMs: 10, what: 'an event' })
      expect({ events, failures }).toEqual({
        events: [{ data: { vaultUpdated: { __typename: 'Vault', id: 'apollo-live', tvl: '99.5' } } }],
        failures: [],
      })
    } finally {
      subscription.unsubscribe()
      await ws.dispose()
    }
    await released()
  })

  it('@defer with Defer20220824Handler: the card first, then the deferred fields, over multipart/mixed', async () => {
    const seen: Seen[] = []
    const client = new ApolloClient({
      cache: new InMemoryCache(),
      link: new HttpLink({ uri: `${base}/graphql`, fetch: recordingFetch(seen) }),
      incrementalHandler: new Defer20220824Handler(),
    })
    clients.push(client)
    const query = gql`
      query VaultDeferred($id: ID!) {
        vault(id: $id) {
          id
          name
          ... @defer {
            status
            sharePrice
          }
        }
      }
    `
    const states: { dataState: string; data: unknown }[] = []
    await new Promise<void>((resolve, reject) => {
      const sub = client.watchQuery({ query, variables: { id: 'apollo-2' }, fetchPolicy: 'network-only' }).subscribe({
        next: ({ dataState, data }) => {
          states.push({ dataState, data })
          if (dataState === 'complete') {
            sub.unsubscribe()
            resolve()
          }
        },
        error: reject,
      })
    })
    expect(seen.map(({ method, accept, status, contentType }) => ({ method, accept, status, multipart: /^multipart\/mixed/.test(contentType ?? '') }))).toEqual(
      [{ method: 'POST', accept: 'multipart/mixed;deferSpec=20220824,application/graphql-response+json,application/json;q=0.9', status: 200, multipart: true }],
    )
    expect(states.filter((s) => s.dataState !== 'empty')).toEqual([
      { dataState: 'streaming', data: { vault: { __typename: 'Vault', id: 'apollo-2', name: 'Apollo Two' } } },
      { dataState: 'complete', data: { vault: { __typename: 'Vault', id: 'apollo-2', name: 'Apollo Two', status: 'paused', sharePrice: '1.25' } } },
    ])
    // client.query resolves once, with everything.
    const { data } = await client.query({ query, variables: { id: 'apollo-2' }, fetchPolicy: 'network-only' })
    expect(data).toEqual({ vault: { __typename: 'Vault', id: 'apollo-2', name: 'Apollo Two', status: 'paused', sharePrice: '1.25' } })
    expect(seen.length).toBe(2)
  })
})

describe(`Apollo Client 4 against a GRAPHQL_TRUSTED_ONLY gateway (${testBackend})`, () => {
  let t: TestApp
  let base: string
  let stop: () => Promise<void>
  let dir: string
  // The file holds the document as Apollo sends it (InMemoryCache adds __typename; Apollo hashes its print).
  const TRUSTED = 'query VaultName($id: ID!) {\n  vault(id: $id) {\n    name\n    __typename\n  }\n}'
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-apollo-'))
    const file = path.join(dir, 'persisted-documents.json')
    await writeFile(file, JSON.stringify({ [sha256(TRUSTED)]: TRUSTED }))
    t = await createTestApp({ GRAPHQL_DOCUMENTS_FILE: file, GRAPHQL_TRUSTED_ONLY: 'true' })
    ;({ base, stop } = await listen(t.app))
    await insertVault(t.db.prisma, 'apollo-t', { name: 'Apollo Trusted' })
  })
  afterAll(async () => {
    await stop()
    await t.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('runs a document of the file by its hash alone, and refuses any other with persisted_query_only', async () => {
    const seen: Seen[] = []
    const client = apqClient(base, seen)
    const trusted = await client.query({
      query: gql`
        query VaultName($id: ID!) {
          vault(id: $id) {
            name
          }
        }
      `,
      variables: { id: 'apollo-t' },
    })
    expect(trusted.data).toEqual({ vault: { __typename: 'Vault', name: 'Apollo Trusted' } })
    expect(seen.map(({ withQuery, status }) => ({ withQuery, status }))).toEqual([{ withQuery: false, status: 200 }])

    seen.length = 0
    const refused = await client.query({ query: gql`query Others { vaults(first: 1) { totalCount } }` }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(CombinedGraphQLErrors.is(refused)).toBe(true)
    expect((refused as CombinedGraphQLErrors).errors).toEqual([
      {
        message: 'This server runs only its trusted documents: send the documentId of one of them instead of the query.',
        extensions: { code: 'persisted_query_only' },
      },
    ])
    // Apollo tried the hash, was told it is unknown, sent the query, and took the refusal as final.
    expect(seen.map(({ withQuery, status }) => ({ withQuery, status }))).toEqual([
      { withQuery: false, status: 404 },
      { withQuery: true, status: 400 },
    ])
    client.stop()
  })
})
