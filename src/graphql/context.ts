import { randomUUID } from 'node:crypto'
import type { Viewer } from '../auth/viewer.js'
import { systemClock, type Clock } from '../core/clock.js'
import type { Deadline } from '../core/deadlines.js'
import type { Db } from '../db/client.js'
import { AppError } from '../core/errors.js'
import { DEFAULT_SPIKE_PCT } from '../vaults/performance.js'
import { DataUse } from '../freshness/answer.js'
import type { DataTimes, Freshness } from '../freshness/status.js'
import type { LiveHub } from '../live/hub.js'
import { createLoaders, type LoaderSettings, type Loaders } from './loaders.js'

/** Request-scoped state, and the process-wide services resolvers reach (the database client). */
export interface Context {
  /**
   * The database client every resolver, loader and store call of this operation reads through: for
   * a public or wallet read, the one src/db/replicas.ts `reader()` picked (a replica or the
   * primary; picked again for each subscription event), else the primary (src/graphql/yoga.ts).
   */
  db: Db
  request: Request
  requestId: string
  /** Lazily built per request; never shared across requests. */
  loaders: Loaders
  now: Date
  /** Settings resolvers' rules read (SPIKE_PCT). */
  settings: LoaderSettings
  /** The app's clock (tests inject one); `now` is its reading when the request began. */
  clock: Clock
  /** The wallet-session caller (key management), authenticated on first use; rejects with an AppError. */
  viewer(): Promise<Viewer>
  /** Aborts at the request's deadline or when its client goes away; pass it to slow work. */
  readonly signal: AbortSignal
  /** The instance's subscription fan-out (src/live/hub.ts); absent where nothing subscribes (the REST shim's tests). */
  live?: LiveHub
  /**
   * A subscription event is about to be resolved: new loaders, a new `now` (an event is answered as
   * of its own time) and the read client picked again (read your writes: the change may not be on
   * every replica yet).
   */
  fresh(): void
  /**
   * The gateway-wide freshness times (decisions §10, GraphQL `meta`); the answer's Data-As-Of is
   * then the gateway's data_as_of. The times the HTTP layer took for its header when it did, else
   * read once (the same for every field of the request).
   */
  dataTimes(): Promise<DataTimes>
  /**
   * Records that this answer read these vaults' data (its Data-As-Of, src/freshness/answer.ts) and
   * returns their data time: a body's `as_of` (null only while the gateway holds no data).
   */
  readData(vaultIds: Iterable<string>): Promise<Date | null>
  /** The app's freshness service (GraphQL `meta`); absent in a context built without one. */
  freshness?: Freshness
}

/** What the HTTP layer knows of a request before GraphQL runs (Yoga's server context). */
export interface RequestScope {
  requestId?: string
  deadline?: Deadline
  /** Set by the REST shim: its answers keep the errors' HTTP statuses (src/graphql/response-rules.ts). */
  rest?: boolean
  /** What the answer reads, with the times its Data-As-Of header is computed from (src/freshness/answer.ts), so body and header agree. */
  data?: DataUse
  /** The client's identity for per-IP limits (src/http/middleware/rate-limit.ts clientIdOf): its refused wallet-session tokens count against it (src/auth/viewer.ts). */
  client?: string
}

const NO_TIMES: DataTimes = { dataAsOf: null, lastImportAt: null, vaults: new Map() }

const notConfigured = () => Promise.reject(new AppError('unavailable', 'Key management is not configured on this server.'))

/** The one context factory, used by GraphQL and the REST shim alike. */
export function createContext({
  db: primary,
  reads,
  request,
  requestId,
  deadline,
  now,
  clock = systemClock,
  authenticate = notConfigured,
  settings = { spikePct: DEFAULT_SPIKE_PCT },
  live,
  data,
  freshness,
  client,
}: RequestScope & {
  /** The primary's client. */
  db: Db
  /** Where this operation's reads go, asked once per request and per subscription event (src/db/replicas.ts `reader`); absent: `db`. */
  reads?: () => Db
  request: Request
  now?: Date
  clock?: Clock
  /** The configuration the loaders' rules read (defaults: the settings' defaults). */
  settings?: LoaderSettings
  authenticate?: (request: Request, client: string | undefined) => Promise<Viewer>
  live?: LiveHub
  freshness?: Freshness
}): Context {
  const route = reads ?? (() => primary)
  let db = route()
  let loaders: Loaders | undefined
  let viewer: Promise<Viewer> | undefined
  let use: Promise<DataUse> | undefined
  const reading = () => (use ??= data ? Promise.resolve(data) : Promise.resolve(freshness?.current() ?? NO_TIMES).then((times) => new DataUse(times)))
  return {
    // Accessors with setters: Yoga copies the context's properties into its own object (getters'
    // values, once), so fresh() assigns through `this`, which works on either object.
    get db() {
      return db
    },
    set db(value) {
      db = value
    },
    live,
    fresh() {
      this.db = route()
      this.loaders = createLoaders(this.db, settings)
      this.now = clock()
    },
    request,
    requestId: requestId ?? request.headers.get('x-request-id') ?? randomUUID(),
    get loaders() {
      loaders ??= createLoaders(db, settings)
      return loaders
    },
    set loaders(value) {
      loaders = value
    },
    now: now ?? clock(),
    settings,
    clock,
    viewer: () => (viewer ??= authenticate(request, client)),
    dataTimes: async () => (await reading()).wide(),
    readData: async (vaultIds) => (await reading()).vaults(vaultIds),
    freshness,
    // The deadline's signal is made on first use: most requests never ask for it.
    get signal() {
      return deadline?.signal ?? request.signal
    },
  }
}
