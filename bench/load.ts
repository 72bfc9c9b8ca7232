import autocannon from 'autocannon'
import type { BenchRequest } from './scenarios.js'

export interface LoadResult {
  requests: number
  rps: number
  p50: number
  p99: number
  /** Answers that were not 2xx, plus socket errors and timeouts. */
  failures: number
}

/** Sends `requests` in rotation over `connections` keep-alive connections for `seconds`. */
export async function load(url: string, requests: BenchRequest[], { seconds, connections }: { seconds: number; connections: number }): Promise<LoadResult> {
  let next = 0
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    requests: [
      {
        setupRequest: (req) => {
          const r = requests[next++ % requests.length]!
          return { ...req, method: r.method, path: r.path, body: r.body, headers: { ...r.headers } }
        },
      },
    ],
  })
  return {
    requests: result.requests.total,
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
  }
}
