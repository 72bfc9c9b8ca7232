import { createHash } from 'node:crypto'
import { Hono } from 'hono'
import { GRAPHIQL_ASSETS, graphiqlAssets } from '../../graphql/graphiql-page.js'
import { chooseEncoding, compressBytes, type Encoding } from '../compression.js'
import { etagMatches } from '../etag.js'
import type { AppEnv } from '../env.js'

// GraphiQL's bundle (src/graphql/graphiql-page.ts), apart from its page: compressed once per
// encoding and kept, then answered from memory to every browser that lacks it. The version in the
// path changes with the package, so the answers are immutable.

interface Served {
  type: string
  etag: string
  identity: Buffer
  variants: Partial<Record<Encoding, Promise<Buffer>>>
}

export function graphiqlRoutes() {
  const app = new Hono<AppEnv>()
  let assets: Promise<Record<string, Served>> | undefined
  const load = () =>
    (assets ??= graphiqlAssets().then((files) =>
      Object.fromEntries(
        Object.entries(files).map(([name, f]): [string, Served] => [
          name,
          { type: f.type, identity: f.body, etag: `"${createHash('sha256').update(f.body).digest('base64url').slice(0, 27)}"`, variants: {} },
        ]),
      ),
    ))
  for (const name of ['graphiql.js', 'graphiql.css', 'favicon.ico']) {
    app.get(`${GRAPHIQL_ASSETS}/${name}`, async (c) => {
      const asset = (await load())[name]!
      const encoding = chooseEncoding(c.req.header('accept-encoding'))
      c.header('Cache-Control', 'public, max-age=31536000, immutable')
      c.header('Vary', 'Accept-Encoding')
      c.header('ETag', encoding ? `W/${asset.etag}` : asset.etag)
      if (etagMatches(c.req.header('if-none-match'), asset.etag)) return c.body(null, 304)
      c.header('Content-Type', asset.type)
      if (!encoding) return c.body(new Uint8Array(asset.identity), 200)
      const body = await (asset.variants[encoding] ??= compressBytes(asset.identity, encoding))
      c.header('Content-Encoding', encoding)
      return c.body(new Uint8Array(body.buffer as ArrayBuffer, body.byteOffset, body.byteLength), 200)
    })
  }
  return app
}
