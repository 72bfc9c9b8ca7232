import type { Deadline } from '../core/deadlines.js'

/**
 * What the long tail's Hono routes read on their context, set from the request's Exchange by their
 * first middleware (src/http/pipeline/long-tail.ts adoptExchange).
 */
export type AppEnv = {
  Variables: {
    requestId: string
    /** performance.now() when the request arrived. */
    started: number
    /** The request's deadline, on the API paths (src/http/pipeline/index.ts admit). */
    deadline?: Deadline
  }
}
