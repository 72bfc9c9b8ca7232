import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { requestKey } from './scenarios.js'

// The physical limit: bare node:http answering every request with the bytes the gateway gave for
// it, from memory. It still reads the request body (a GraphQL POST's key is its body), so the only
// work left is the HTTP exchange itself. argv[2]: a JSON file of {key, status, contentType, body}.

interface Recorded {
  key: string
  status: number
  contentType: string
  body: string
}

const recorded = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Recorded[]
const answers = new Map(
  recorded.map((r) => [
    r.key,
    { status: r.status, headers: { 'content-type': r.contentType, 'content-length': Buffer.byteLength(r.body) }, body: Buffer.from(r.body) },
  ]),
)

const server = createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const answer = answers.get(requestKey(req.method ?? 'GET', req.url ?? '/', Buffer.concat(chunks).toString('utf8')))
    if (!answer) return void res.writeHead(404).end()
    res.writeHead(answer.status, answer.headers)
    res.end(answer.body)
  })
})
server.keepAliveTimeout = 60_000
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`)
})
