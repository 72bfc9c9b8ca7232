import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { Hono } from 'hono'
import { openApiDocument } from '../../openapi/operations.js'
import { packageRoot } from '../../core/paths.js'
import type { AppEnv } from '../env.js'
import { staticFile } from './static.js'

const require = createRequire(import.meta.url)
const swaggerDir = path.dirname(require.resolve('swagger-ui-dist/package.json'))
const publicDir = path.join(packageRoot, 'public')

export const packageVersion = (JSON.parse(readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version

/** `/openapi.json` and `/docs`, the browsable reference (Swagger UI, served from the package: no CDN). */
export function referenceRoutes() {
  const app = new Hono<AppEnv>()
  let document: string | undefined
  app.get('/openapi.json', (c) => {
    document ??= JSON.stringify(openApiDocument(packageVersion), null, 2)
    c.header('Cache-Control', 'public, max-age=60')
    c.header('Access-Control-Allow-Origin', '*')
    return c.body(document, 200, { 'Content-Type': 'application/json; charset=utf-8' })
  })
  app.get('/docs', staticFile(path.join(publicDir, 'docs', 'index.html'), { maxAgeSeconds: 60 }))
  app.get('/docs/docs.js', staticFile(path.join(publicDir, 'docs', 'docs.js'), { maxAgeSeconds: 60 }))
  app.get('/docs/swagger-ui.css', staticFile(path.join(swaggerDir, 'swagger-ui.css'), { maxAgeSeconds: 3600 }))
  app.get('/docs/swagger-ui-bundle.js', staticFile(path.join(swaggerDir, 'swagger-ui-bundle.js'), { maxAgeSeconds: 3600 }))
  app.get('/docs/favicon-32x32.png', staticFile(path.join(swaggerDir, 'favicon-32x32.png'), { maxAgeSeconds: 3600 }))
  return app
}
