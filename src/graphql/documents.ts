import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations'
import { type GraphQLSchema, Kind, parse, validate } from 'graphql'
import { createGraphQLError, type GraphQLParams, type Plugin } from 'graphql-yoga'
import { ConfigError } from '../config.js'
import { defaultStatus, type ErrorCode } from '../core/errors.js'

// Trusted documents and Apollo's automatic persisted queries (docs/spec/decisions.md §15,
// docs/graphql-clients.md). GRAPHQL_DOCUMENTS_FILE is the `persisted-documents.json` GraphQL Code
// Generator's client preset writes: `{ "<sha256 hex>": "<document>" }` (keys may carry the
// `sha256:` prefix of the GraphQL-over-HTTP persisted documents appendix). A request names one by
// `documentId` (POST body or GET query) or by APQ's `extensions.persistedQuery.sha256Hash`.
//
// Where the id is resolved: in Yoga's `onParams`, by Yoga's persisted operations plugin
// (`usePersistedOperations` below), which runs on both ways /graphql executes (yoga.fetch and
// getResultForParams: src/http/pipeline/graphql.ts; graphql-yoga 5's getResultForParams runs the
// onParams hooks itself, before its params handler, and test/graphql/documents.test.ts runs both). So there is one place that turns an id into a
// document and one that enforces GRAPHQL_TRUSTED_ONLY, whatever the transport (a JSON POST, a GET,
// an event stream, a form post). The /graphql step only *reads* the same store (`textOf`) to
// classify the operation before it runs (public or not: the response cache, Cache-Control,
// Data-As-Of); it never answers from it.

const HASH = /^(?:sha256:)?([0-9a-fA-F]{64})$/

/** The SHA-256 of a document's text, lowercase hex: its id. */
export const documentHash = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

/** The hex of an id (`sha256:<hex>` or the bare hex, any case); undefined when it is neither. */
export function hashOfId(id: string): string | undefined {
  return HASH.exec(id)?.[1]?.toLowerCase()
}

/** A documents file's entries by hex id, and what is wrong with it (each problem names its key). */
export function readDocuments(text: string): { documents: Map<string, string>; problems: string[] } {
  const documents = new Map<string, string>()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    return { documents, problems: [`not JSON (${(e as Error).message})`] }
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return { documents, problems: ['must be a JSON object of documents keyed by their SHA-256 ({ "sha256:<hex>": "<document>" })'] }
  }
  const problems: string[] = []
  // The operator's own file: its keys are shown (cut short), not withheld as a client's values are.
  const shown = (key: string) => JSON.stringify(key.length > 80 ? `${key.slice(0, 77)}…` : key)
  for (const [key, value] of Object.entries(json)) {
    const hash = hashOfId(key)
    if (!hash) problems.push(`${shown(key)}: not a SHA-256 id ("sha256:<64 hex digits>" or the bare hex)`)
    else if (typeof value !== 'string') problems.push(`${shown(key)}: the document must be a string`)
    else if (documentHash(value) !== hash) problems.push(`${shown(key)}: is not the SHA-256 of its document (${documentHash(value)})`)
    else documents.set(hash, value)
  }
  return { documents, problems }
}

/** GRAPHQL_DOCUMENTS_FILE's documents; a ConfigError naming each problem when it cannot serve. */
export function loadDocumentsFile(file: string): Map<string, string> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (e) {
    throw new ConfigError([`GRAPHQL_DOCUMENTS_FILE: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`])
  }
  const { documents, problems } = readDocuments(text)
  if (problems.length > 0) throw new ConfigError(problems.map((p) => `GRAPHQL_DOCUMENTS_FILE: ${p}`))
  return documents
}

/** What in a documents file the schema refuses: a document that does not parse or validate, or that holds no operation. */
export function schemaProblems(documents: Map<string, string>, schema: GraphQLSchema): string[] {
  const problems: string[] = []
  for (const [hash, text] of documents) {
    const where = `"sha256:${hash}"`
    try {
      const document = parse(text)
      if (!document.definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION)) problems.push(`${where}: holds no operation`)
      for (const error of validate(schema, document)) problems.push(`${where}: ${error.message}`)
    } catch (e) {
      problems.push(`${where}: ${(e as Error).message}`)
    }
  }
  return problems
}

/** APQ registrations kept (oldest dropped first): a client whose registration was dropped sends its query again. */
const MAX_REGISTERED = 5000

/** APQ's protocol word: Apollo Client's persisted query link retries with the full query when it reads it. */
const APQ_NOT_FOUND = 'PersistedQueryNotFound'

/** The trusted documents (GRAPHQL_DOCUMENTS_FILE) and, unless trusted-only, the APQ registrations of this process. */
export class DocumentStore {
  readonly #trusted: Map<string, string>
  readonly #registered = new Map<string, string>()

  constructor(
    trusted: Map<string, string>,
    readonly trustedOnly: boolean,
  ) {
    this.#trusted = trusted
  }

  static fromConfig(g: { documentsFile: string | undefined; trustedOnly: boolean }): DocumentStore {
    return new DocumentStore(g.documentsFile ? loadDocumentsFile(g.documentsFile) : new Map(), g.trustedOnly)
  }

  /** The document of a hex id, trusted or registered. */
  get(hash: string): string | undefined {
    return this.#trusted.get(hash) ?? this.#registered.get(hash)
  }

  isTrusted(query: string): boolean {
    return this.#trusted.has(documentHash(query))
  }

  /**
   * Documents of the gateway's own (the REST shim's fixed documents): trusted like the file's, so
   * the shim keeps working under trusted-only, and a client may run them by id too.
   */
  trust(texts: Iterable<string>): void {
    for (const text of texts) this.#trusted.set(documentHash(text), text)
  }

  /** An APQ registration (never under trusted-only: only the file's documents run there). */
  register(hash: string, query: string): void {
    if (this.trustedOnly || this.#trusted.has(hash) || this.#registered.has(hash)) return
    if (this.#registered.size >= MAX_REGISTERED) this.#registered.delete(this.#registered.keys().next().value!)
    this.#registered.set(hash, query)
  }

  /** Whether a GET names, without a query, a document this store holds (it needs no CSRF header: src/graphql/protection.ts). */
  knowsGet(url: URL): boolean {
    if (url.searchParams.has('query')) return false
    const id = url.searchParams.get('documentId')
    const hash = id === null ? undefined : hashOfId(id)
    return hash !== undefined && this.#trusted.has(hash)
  }

  /**
   * The text a request's params run, for classifying it before it runs: its `query`, else the
   * document its id names; undefined when it names none this store holds (Yoga answers that).
   */
  textOf(params: { query?: unknown; documentId?: unknown; extensions?: unknown }): string | undefined {
    if (typeof params.query === 'string') return params.query
    const id = idOf(params)
    const hash = id === undefined ? undefined : hashOfId(id)
    return hash === undefined ? undefined : this.get(hash)
  }
}

/** APQ's `extensions.persistedQuery`, when a request carries one. */
function persistedQueryOf(params: { extensions?: unknown }): Record<string, unknown> | undefined {
  const ext = params.extensions
  if (typeof ext !== 'object' || ext === null) return undefined
  const pq = (ext as Record<string, unknown>).persistedQuery
  return typeof pq === 'object' && pq !== null ? (pq as Record<string, unknown>) : undefined
}

/** The id a request names: `documentId`, else APQ's hash. */
function idOf(params: { documentId?: unknown; extensions?: unknown }): string | undefined {
  if (typeof params.documentId === 'string') return params.documentId
  const hash = persistedQueryOf(params)?.sha256Hash
  return typeof hash === 'string' ? hash : undefined
}

/** Whether a request names a document instead of (or beside) sending it. */
export const namesDocument = (params: { documentId?: unknown; extensions?: unknown }) => params.documentId != null || persistedQueryOf(params) !== undefined

/** A refusal before the operation runs, built with Yoga's graphql (Yoga keeps its internal `http` extension out of the answer then). */
const refusal = (code: ErrorCode, message: string) => createGraphQLError(message, { extensions: { code, http: { status: defaultStatus[code] } } })

const NOT_TRUSTED = 'No trusted document has this documentId.'

const ONLY_TRUSTED = 'This server runs only its trusted documents: send the documentId of one of them instead of the query.'

/**
 * Yoga's persisted operations plugin over the store, with APQ around it: a request sending both a
 * query and its hash has the hash checked (a mismatch is `bad_request`) and the query registered
 * (unless trusted-only); a hash alone runs the registered or trusted document. Under trusted-only,
 * a query runs only when it is one of the file's documents, sent whole.
 */
export function usePersistedDocuments(store: DocumentStore): Plugin {
  const persisted = usePersistedOperations({
    getPersistedOperation: (key) => {
      const hash = hashOfId(key)
      return hash === undefined ? null : (store.get(hash) ?? null)
    },
    extractPersistedOperationId: (params) => idOf(params as GraphQLParams & { documentId?: unknown }) ?? null,
    // A query reaching the plugin under trusted-only was checked below: only trusted ones get here.
    allowArbitraryOperations: true,
    customErrors: {
      // The id is not repeated: a run of 64 hex digits is never echoed (src/core/errors.ts quoted).
      notFound: ({ params }) => refusal('persisted_query_not_found', (params as { documentId?: unknown }).documentId == null ? APQ_NOT_FOUND : NOT_TRUSTED),
    },
  })
  const resolve = persisted.onParams!
  return {
    ...persisted,
    // Yoga's GET parser reads query, variables, operationName and extensions only.
    onRequestParse({ request, url }) {
      if (request.method !== 'GET') return
      const documentId = url.searchParams.get('documentId')
      if (documentId === null) return
      return {
        onRequestParseDone({ requestParserResult, setRequestParserResult }) {
          if (!Array.isArray(requestParserResult)) setRequestParserResult({ ...requestParserResult, documentId } as GraphQLParams)
        },
      }
    },
    onParams(payload) {
      const params = payload.params as GraphQLParams & { documentId?: unknown }
      const pq = persistedQueryOf(params)
      if (params.documentId != null) {
        if (params.query != null) throw refusal('bad_request', 'Send a query or a documentId, not both.')
        if (typeof params.documentId !== 'string' || !hashOfId(params.documentId))
          throw refusal('bad_request', 'documentId must be "sha256:" followed by 64 hex digits, or the bare hex.')
      } else if (pq) {
        if (pq.version !== 1 || typeof pq.sha256Hash !== 'string' || !hashOfId(pq.sha256Hash))
          throw refusal('bad_request', 'extensions.persistedQuery must be {"version":1,"sha256Hash":"<64 hex digits>"}.')
        if (typeof params.query === 'string') {
          const hash = hashOfId(pq.sha256Hash)!
          if (documentHash(params.query) !== hash) throw refusal('bad_request', 'extensions.persistedQuery.sha256Hash is not the SHA-256 of the query.')
          if (store.trustedOnly && !store.isTrusted(params.query)) throw refusal('persisted_query_only', ONLY_TRUSTED)
          store.register(hash, params.query)
          return
        }
      } else {
        // Neither a query nor an id: Yoga's own check answers ("Must provide query string.").
        if (params.query == null) return
        if (store.trustedOnly && !(typeof params.query === 'string' && store.isTrusted(params.query))) throw refusal('persisted_query_only', ONLY_TRUSTED)
        return
      }
      return resolve(payload)
    },
  }
}
