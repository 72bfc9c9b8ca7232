import type { Hono, MiddlewareHandler } from 'hono'
import type { AppEnv } from '../env.js'
import { type Answer, answerOf } from './answer.js'
import type { Exchange } from './exchange.js'

// The long tail (admin, probes, metrics, the explorer, the reference, GraphiQL's assets, CORS
// preflights, not found) stays a Hono app: one step of the pipeline like any other
// (docs/adr/0005-one-pipeline.md). It gets the request as a Web Request, its answer becomes an
// answer of the pipeline, and `finish` adds what policy says, as for every other step.

type Bindings = { exchange: Exchange; incoming?: unknown; outgoing?: unknown }

/** The long tail's first middleware: the exchange's id, time and deadline on Hono's context, and Hono's route label back on the exchange. */
export const adoptExchange: MiddlewareHandler<AppEnv> = async (c, next) => {
  const x = (c.env as Bindings).exchange
  c.set('requestId', x.requestId)
  c.set('started', x.started)
  if (x.deadline) c.set('deadline', x.deadline)
  try {
    await next()
  } finally {
    x.route = c.req.routePath || 'unmatched'
  }
}

export function longTailStep(app: Hono<AppEnv>): (x: Exchange) => Promise<Answer> {
  return async (x) => {
    const bindings = { ...(x.env as object | undefined), exchange: x } satisfies Bindings
    return answerOf(await app.fetch(await x.web(), bindings))
  }
}
