import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import type { GraphiQLOptions } from 'graphql-yoga'

// GraphiQL's page as a small HTML shell: @graphql-yoga/render-graphiql inlines its whole bundle
// (~9 MB, ~2 MB with brotli) into every page it renders; here the bundle is a separate script
// (src/http/routes/graphiql.ts) under a path naming its version, so a browser fetches it once,
// compressed, and keeps it. The page itself holds only the options: the example document.

const require = createRequire(import.meta.url)
const bundleVersion = (
  JSON.parse(readFileSync(path.join(path.dirname(require.resolve('@graphql-yoga/render-graphiql')), '..', 'package.json'), 'utf8')) as {
    version: string
  }
).version

/** Where the bundle's files are served; the version in the path makes them immutable. */
export const GRAPHIQL_ASSETS = `/graphiql/${bundleVersion}`

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`)
/** JSON inside a script element: `<` escaped, so no string can close the element. */
const scriptJson = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c')

/** The page Yoga answers for GET /graphql from a browser (what renderGraphiQL writes, with the bundle referenced instead of inlined). */
export function renderGraphiQLShell(options?: GraphiQLOptions): string {
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>${escapeHtml(options?.title ?? 'GraphiQL')}</title>
    <link rel="icon" href="${GRAPHIQL_ASSETS}/favicon.ico" />
    <link rel="stylesheet" href="${GRAPHIQL_ASSETS}/graphiql.css" />
  </head>
  <body id="body" class="no-focus-outline">
    <noscript>You need to enable JavaScript to run this app.</noscript>
    <div id="root"></div>
    <script src="${GRAPHIQL_ASSETS}/graphiql.js"></script>
    <script>
      YogaGraphiQL.renderYogaGraphiQL(window.document.querySelector('#root'), ${scriptJson(options ?? {})});
    </script>
  </body>
</html>
`
}

export interface GraphiQLAsset {
  body: Buffer
  type: string
}

/**
 * The bundle's files, built from the package's parts on first use (it holds ~30 MB of heap that
 * production, without GraphiQL, never loads). The script is what renderGraphiQL inlines: the
 * Monaco workers started from blob: URLs, then the bundle.
 */
export async function graphiqlAssets(): Promise<Record<string, GraphiQLAsset>> {
  const { css, editorWorkerService, favicon, graphqlWorker, js, jsonWorker } = await import('@graphql-yoga/render-graphiql/graphiql')
  const script = `(function () {
  function prepareBlob(workerContent) {
    return URL.createObjectURL(new Blob([workerContent], { type: 'application/javascript' }));
  }
  var workers = {
    editorWorkerService: prepareBlob(${JSON.stringify(editorWorkerService)}),
    json: prepareBlob(${JSON.stringify(jsonWorker)}),
    graphql: prepareBlob(${JSON.stringify(graphqlWorker)}),
  };
  self['MonacoEnvironment'] = { globalAPI: false, getWorkerUrl: function (moduleId, label) { return workers[label]; } };
})();
${js};
`
  const icon = /^data:([^;,]+);base64,(.*)$/s.exec(favicon)
  return {
    'graphiql.js': { body: Buffer.from(script), type: 'text/javascript; charset=utf-8' },
    'graphiql.css': { body: Buffer.from(css), type: 'text/css; charset=utf-8' },
    'favicon.ico': icon ? { body: Buffer.from(icon[2]!, 'base64'), type: icon[1]! } : { body: Buffer.alloc(0), type: 'image/x-icon' },
  }
}
