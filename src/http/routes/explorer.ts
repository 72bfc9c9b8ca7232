import { createRequire } from 'node:module'
import path from 'node:path'
import { Hono } from 'hono'
import { packageRoot } from '../../core/paths.js'
import type { AppEnv } from '../env.js'
import { staticFile } from './static.js'

const require = createRequire(import.meta.url)
// chart.js's exports map hides dist/, so find the package folder from its CommonJS entry (dist/chart.cjs).
const chartDist = path.dirname(require.resolve('chart.js'))
const explorerDir = path.join(packageRoot, 'public', 'explorer')

// The page talks to /graphql only and loads nothing from elsewhere; the policy makes that a rule.
const PAGE_POLICY = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

/** The page's own files: the entry module, the modules it imports, the stylesheet. */
export const EXPLORER_FILES = ['explorer.js', 'lib.js', 'performance.js', 'freshness.js', 'wallet.js', 'live.js', 'explorer.css']

/** The links a non-browser client gets at `/`. */
const INDEX = {
  name: 'vaultgate',
  links: { explorer: '/', graphql: '/graphql', rest: '/v1/vaults', docs: '/docs', openapi: '/openapi.json', metrics: '/metrics', health: '/healthz' },
}

/** `/`: the vault explorer page for browsers (JSON links otherwise), and its assets under /explorer/. */
export function explorerRoutes() {
  const app = new Hono<AppEnv>()
  const page = staticFile(path.join(explorerDir, 'index.html'), { maxAgeSeconds: 60 })
  app.get('/', (c) => {
    c.header('Vary', 'Accept')
    if (!c.req.header('accept')?.includes('text/html')) return c.json(INDEX)
    c.header('Content-Security-Policy', PAGE_POLICY)
    return page(c)
  })
  for (const file of EXPLORER_FILES) app.get(`/explorer/${file}`, staticFile(path.join(explorerDir, file), { maxAgeSeconds: 60 }))
  app.get('/explorer/chart.umd.min.js', staticFile(path.join(chartDist, 'chart.umd.min.js'), { maxAgeSeconds: 3600 }))
  return app
}
