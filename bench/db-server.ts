import { createServer } from 'node:http'
import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { dbRoutes, operationOf, type Query } from './db-queries.js'

// The database-limit server: bare node:http, one hand-written statement per request (see
// db-queries.ts). `DATABASE_URL` = PostgreSQL through a pg pool of `POOL_MAX` connections (the
// gateway's default pool size; JIT off, as the gateway's sessions: src/db/client.ts createPool), or
// `PGLITE_DIR` = a copy of the embedded database.

const pool = process.env.DATABASE_URL
  ? new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.POOL_MAX ?? 10), options: '-c jit=off' })
  : undefined
const pglite = pool ? undefined : await PGlite.create(process.env.PGLITE_DIR!)
const query: Query = pool
  ? async (sql, params) => (await pool.query(sql, params)).rows
  : async (sql, params) => (await pglite!.query<Record<string, any>>(sql, params)).rows

const server = createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', async () => {
    const url = new URL(req.url ?? '/', 'http://bench')
    const body = Buffer.concat(chunks).toString('utf8')
    const operation = req.method === 'POST' && url.pathname === '/graphql' ? operationOf(body) : undefined
    try {
      for (const route of dbRoutes) {
        if (route.method !== req.method || (route.operation && route.operation !== operation)) continue
        const match = url.pathname.match(route.pattern)
        if (!match) continue
        const answer = await route.handle({ method: req.method, path: url.pathname, search: url.searchParams, body }, query, match)
        const bytes = JSON.stringify(answer.body)
        res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(bytes) })
        res.end(bytes)
        return
      }
      res.writeHead(404).end()
    } catch (e) {
      process.stderr.write(`db-server: ${(e as Error).message}\n`)
      res.writeHead(500).end()
    }
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`)
})
