import { createApp, type App } from '../../src/app.js'
import type { Clock } from '../../src/core/clock.js'
import { loadConfig, type Config } from '../../src/config.js'
import type { Database } from '../../src/db/client.js'
import { testDatabase } from './db.js'

export interface TestApp {
  app: App
  db: Database
  config: Config
  /** In-process request (no sockets), like Yoga's own tests. */
  request(path: string, init?: RequestInit): Promise<Response>
  graphql(query: string, variables?: Record<string, unknown>, headers?: Record<string, string>): Promise<{ status: number; body: any }>
  close(): Promise<void>
}

/** `clock`: the app's time for key expiry and key-cache age (a test moves it instead of waiting). */
export async function createTestApp(env: Record<string, string> = {}, options: { clock?: Clock } = {}): Promise<TestApp> {
  const db = await testDatabase()
  // The response cache is off unless a test turns it on (RESPONSE_CACHE_TTL_MS): statement counts
  // and fresh reads after direct imports are asserted everywhere else. So is the webhook worker
  // (WEBHOOK_WORKER): its polls would count among a request's statements. API-key usage is written
  // when a test calls app.keyUsage.flush() (and at close), not on a timer, for the same reason.
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    RESPONSE_CACHE_TTL_MS: '0',
    WEBHOOK_WORKER: 'false',
    API_KEY_USAGE_FLUSH_MS: '600000',
    ...env,
  })
  const app = createApp({ config, db, clock: options.clock })
  await app.ready
  const request = (path: string, init?: RequestInit) => app.fetch(new Request(`http://vaultgate.test${path}`, init))
  return {
    app,
    db,
    config,
    request,
    graphql: async (query, variables, headers = {}) => {
      const res = await request('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', ...headers },
        body: JSON.stringify({ query, variables }),
      })
      return { status: res.status, body: await res.json() }
    },
    close: async () => {
      await app.close()
      await db.close()
    },
  }
}
