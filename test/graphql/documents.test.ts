import { createHash } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importDocument } from '../../src/importer/write.js'
import { createTestApp, type TestApp } from '../support/app.js'
import { testBackend } from '../support/db.js'
import { cacheClearedSince } from '../support/eventually.js'
import { recordSql } from '../support/sql.js'
import { vaultDoc } from '../support/wallet-data.js'
import { answered } from '../support/bodies.js'

// Trusted documents and APQ (docs/spec/decisions.md §15, docs/graphql-clients.md): a document
// named by `documentId` (POST or GET) or by APQ's hash, GRAPHQL_TRUSTED_ONLY, and a public GET by
// id answered like a REST read (Cache-Control public, ETag, 304, from the response cache).

const VAULT = 'query DashVault($id: ID!) { vault(id: $id) { id name tvl } }'
const VAULT_NAME = 'query VaultName($id: ID!) { vault(id: $id) { name } }'
const MY_KEY = 'query MyKey { apiKey { keyPrefix } }'
const OTHER = 'query Other { vaults(first: 1) { totalCount } }'
const REVOKE = 'mutation Revoke { revokeApiKey { revoked } }'
const LIVE = 'subscription Live($id: ID!) { vaultUpdated(id: $id) { id } }'
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
const JSON_ACCEPT = 'application/graphql-response+json'

let dir: string
let file: string

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'vaultgate-documents-'))
  file = path.join(dir, 'persisted-documents.json')
  // As GraphQL Code Generator's client preset writes it (hashAlgorithm sha256), one key with the prefix.
  await writeFile(
    file,
    JSON.stringify({
      [`sha256:${sha256(VAULT)}`]: VAULT,
      [sha256(VAULT_NAME)]: VAULT_NAME,
      [sha256(MY_KEY)]: MY_KEY,
      [sha256(REVOKE)]: REVOKE,
      [sha256(LIVE)]: LIVE,
    }),
  )
})
afterAll(() => rm(dir, { recursive: true, force: true }))

const post = (t: TestApp, body: unknown, headers: Record<string, string> = {}) =>
  t.request('/graphql', { method: 'POST', headers: { 'content-type': 'application/json', accept: JSON_ACCEPT, ...headers }, body: JSON.stringify(body) })

const answer = async (res: Response) => ({ status: res.status, body: await res.json() })

describe(`trusted documents and APQ (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ GRAPHQL_DOCUMENTS_FILE: file, RESPONSE_CACHE_TTL_MS: '60000' })
    const generation = t.app.responseCache.ticket()
    await importDocument({ vaults: [vaultDoc('doc-a', { name: 'Doc A', tvl: '12.5' })] }, t.db.prisma)
    await cacheClearedSince(t.app.responseCache, generation)
  })
  afterAll(() => t.close())

  it('runs a document by its id, prefixed or bare, by POST', async () => {
    const expected = { status: 200, body: answered({ vault: { id: 'doc-a', name: 'Doc A', tvl: '12.5' } }) }
    expect(await answer(await post(t, { documentId: `sha256:${sha256(VAULT)}`, variables: { id: 'doc-a' } }))).toEqual(expected)
    expect(await answer(await post(t, { documentId: sha256(VAULT).toUpperCase(), variables: { id: 'doc-a' } }))).toEqual(expected)
  })

  it('answers an unknown or malformed id, and an id beside a query, with their codes', async () => {
    const unknown = `sha256:${sha256('query Nope { vaults { totalCount } }')}`
    expect(await answer(await post(t, { documentId: unknown }))).toEqual({
      status: 404,
      body: { errors: [{ message: 'No trusted document has this documentId.', extensions: { code: 'persisted_query_not_found' } }] },
    })
    expect(await answer(await post(t, { documentId: 'md5:abc' }))).toEqual({
      status: 400,
      body: { errors: [{ message: 'documentId must be "sha256:" followed by 64 hex digits, or the bare hex.', extensions: { code: 'bad_request' } }] },
    })
    expect(await answer(await post(t, { documentId: sha256(VAULT), query: VAULT }))).toEqual({
      status: 400,
      body: { errors: [{ message: 'Send a query or a documentId, not both.', extensions: { code: 'bad_request' } }] },
    })
  })

  it('answers malformed ids, hashes and parameters with bad_request, by POST and GET', async () => {
    const refused = async (res: Response) => {
      const { status, body } = await answer(res)
      return { status, code: body.errors[0].extensions.code, message: body.errors[0].message }
    }
    const get = (query: string) => t.request(`/graphql?${query}`, { headers: { accept: JSON_ACCEPT } })
    expect(await refused(await post(t, { documentId: 42 }))).toEqual({
      status: 400,
      code: 'bad_request',
      message: 'documentId must be "sha256:" followed by 64 hex digits, or the bare hex.',
    })
    expect(await refused(await post(t, { extensions: { persistedQuery: { version: 2, sha256Hash: 'abc' } } }))).toEqual({
      status: 400,
      code: 'bad_request',
      message: 'extensions.persistedQuery must be {"version":1,"sha256Hash":"<64 hex digits>"}.',
    })
    expect(await refused(await get(`documentId=${sha256(VAULT_NAME)}&variables=%7Bnope`))).toEqual({
      status: 400,
      code: 'bad_request',
      message: 'The variables parameter must be a JSON object.',
    })
    expect(await refused(await get('extensions=[1]'))).toEqual({ status: 400, code: 'bad_request', message: 'The extensions parameter must be a JSON object.' })
    expect(await refused(await get('documentId=nope'))).toEqual({
      status: 400,
      code: 'bad_request',
      message: 'documentId must be "sha256:" followed by 64 hex digits, or the bare hex.',
    })
  })

  it('registers an APQ query on first sight and runs it by its hash after', async () => {
    const query = `query Apq { vault(id: "doc-a") { name } } # ${Math.random()}`
    const hash = sha256(query)
    const persistedQuery = { version: 1, sha256Hash: hash }
    expect(await answer(await post(t, { extensions: { persistedQuery } }))).toEqual({
      status: 404,
      body: { errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'persisted_query_not_found' } }] },
    })
    expect(await answer(await post(t, { query, extensions: { persistedQuery } }))).toEqual({ status: 200, body: answered({ vault: { name: 'Doc A' } }) })
    expect(await answer(await post(t, { extensions: { persistedQuery } }))).toEqual({ status: 200, body: answered({ vault: { name: 'Doc A' } }) })
  })

  it('refuses an APQ hash that is not its query’s', async () => {
    const persistedQuery = { version: 1, sha256Hash: sha256(VAULT) }
    expect(await answer(await post(t, { query: OTHER, extensions: { persistedQuery } }))).toEqual({
      status: 400,
      body: { errors: [{ message: 'extensions.persistedQuery.sha256Hash is not the SHA-256 of the query.', extensions: { code: 'bad_request' } }] },
    })
  })

  it('serves a public GET by id like a REST read: public, ETag, 304, from the cache without SQL', async () => {
    const target = `/graphql?documentId=sha256:${sha256(VAULT_NAME)}&variables=${encodeURIComponent(JSON.stringify({ id: 'doc-a' }))}`
    const first = await t.request(target, { headers: { accept: JSON_ACCEPT } })
    expect(first.status).toBe(200)
    expect(await first.json()).toEqual(answered({ vault: { name: 'Doc A' } }))
    const etag = first.headers.get('etag')!
    expect(etag).toMatch(/^W\/"[\w-]{27}"$/)
    expect(first.headers.get('cache-control')).toBe('public, max-age=10')
    expect(first.headers.get('content-type')).toBe('application/graphql-response+json; charset=utf-8')
    const { result: again, statements } = await recordSql(async () => {
      const res = await t.request(target, { headers: { accept: JSON_ACCEPT } })
      return { status: res.status, etag: res.headers.get('etag'), cacheControl: res.headers.get('cache-control'), body: await res.json() }
    })
    expect(again).toEqual({ status: 200, etag, cacheControl: 'public, max-age=10', body: answered({ vault: { name: 'Doc A' } }) })
    expect(statements).toEqual([])
    const revalidated = await t.request(target, { headers: { accept: JSON_ACCEPT, 'if-none-match': etag } })
    expect({ status: revalidated.status, body: await revalidated.text(), etag: revalidated.headers.get('etag') }).toEqual({ status: 304, body: '', etag })
  })

  it('opens a subscription by id as an event stream, by POST and by GET without the CSRF header (an EventSource sends none)', async () => {
    const variables = JSON.stringify({ id: 'doc-a' })
    const opened = []
    for (const res of [
      await post(t, { documentId: sha256(LIVE), variables: { id: 'doc-a' } }, { accept: 'text/event-stream' }),
      await t.request(`/graphql?documentId=sha256:${sha256(LIVE)}&variables=${encodeURIComponent(variables)}`, { headers: { accept: 'text/event-stream' } }),
    ]) {
      opened.push({ status: res.status, type: res.headers.get('content-type') })
      await res.body?.cancel()
    }
    expect(opened).toEqual([
      { status: 200, type: 'text/event-stream' },
      { status: 200, type: 'text/event-stream' },
    ])
    // A query by GET still needs the header.
    const plain = await t.request(`/graphql?query=${encodeURIComponent(VAULT_NAME)}&variables=${encodeURIComponent(variables)}`, {
      headers: { accept: JSON_ACCEPT },
    })
    expect(plain.status).toBe(400)
    await plain.body?.cancel()
  })

  it('answers an APQ hash by GET (Apollo Client’s useGETForHashedQueries) like a documentId', async () => {
    const extensions = encodeURIComponent(JSON.stringify({ persistedQuery: { version: 1, sha256Hash: sha256(VAULT_NAME) } }))
    const res = await t.request(`/graphql?extensions=${extensions}&variables=${encodeURIComponent(JSON.stringify({ id: 'doc-a' }))}`, {
      headers: { accept: JSON_ACCEPT },
    })
    expect({ status: res.status, cacheControl: res.headers.get('cache-control'), body: await res.json() }).toEqual({
      status: 200,
      cacheControl: 'public, max-age=10',
      body: answered({ vault: { name: 'Doc A' } }),
    })
  })

  it('runs a GET by id without the CSRF header, and keeps wallet reads and key management out of the shared cache', async () => {
    const res = await t.request(`/graphql?documentId=${sha256(MY_KEY)}`, { headers: { accept: JSON_ACCEPT } })
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(res.headers.get('etag')).toBeNull()
    expect((await res.json()).errors[0].extensions.code).toBe('unavailable') // key management is not configured here
    // A mutation is still refused by GET, as GraphQL over HTTP says.
    const mutation = await t.request(`/graphql?documentId=${sha256(REVOKE)}`, { headers: { accept: JSON_ACCEPT } })
    expect({ status: mutation.status, allow: mutation.headers.get('allow'), body: await mutation.json() }).toEqual({
      status: 405,
      allow: 'POST',
      body: { errors: [{ message: 'Can only perform a mutation operation from a POST request.', extensions: { code: 'bad_request' } }] },
    })
  })
})

describe(`GRAPHQL_TRUSTED_ONLY (${testBackend})`, () => {
  let t: TestApp
  beforeAll(async () => {
    t = await createTestApp({ GRAPHQL_DOCUMENTS_FILE: file, GRAPHQL_TRUSTED_ONLY: 'true' })
    await importDocument({ vaults: [vaultDoc('doc-t', { name: 'Doc T' })] }, t.db.prisma)
  })
  afterAll(() => t.close())

  const refused = {
    status: 400,
    body: {
      errors: [
        {
          message: 'This server runs only its trusted documents: send the documentId of one of them instead of the query.',
          extensions: { code: 'persisted_query_only' },
        },
      ],
    },
  }

  it('runs the file’s documents, by id or sent whole, and refuses any other', async () => {
    expect(await answer(await post(t, { documentId: sha256(VAULT_NAME), variables: { id: 'doc-t' } }))).toEqual({
      status: 200,
      body: answered({ vault: { name: 'Doc T' } }),
    })
    expect(await answer(await post(t, { query: VAULT_NAME, variables: { id: 'doc-t' } }))).toEqual({
      status: 200,
      body: answered({ vault: { name: 'Doc T' } }),
    })
    expect(await answer(await post(t, { query: OTHER }))).toEqual(refused)
    // By GET (Yoga's own HTTP handling) and as an event stream too.
    const get = await t.request(`/graphql?query=${encodeURIComponent(OTHER)}`, { headers: { accept: JSON_ACCEPT, 'x-graphql-csrf': '1' } })
    expect(await answer(get)).toEqual(refused)
  })

  it('keeps the REST shim working: its fixed documents are trusted documents of their own', async () => {
    const res = await t.request('/v1/vaults/doc-t')
    const body = await res.json()
    expect({ status: res.status, body }).toMatchObject({ status: 200, body: { name: 'Doc T' } })
  })

  it('registers nothing by APQ: an unknown hash stays unknown', async () => {
    const persistedQuery = { version: 1, sha256Hash: sha256(OTHER) }
    expect(await answer(await post(t, { query: OTHER, extensions: { persistedQuery } }))).toEqual(refused)
    expect(await answer(await post(t, { extensions: { persistedQuery } }))).toEqual({
      status: 404,
      body: { errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'persisted_query_not_found' } }] },
    })
  })
})
