import http from 'node:http'
import type { AddressInfo } from 'node:net'

// A JSON-RPC proxy in front of a real node (anvil) that can lie about blocks the way a faulty or
// hostile node does: it forwards every request as it is and rewrites `hash`, `parentHash` and
// `timestamp` of chosen blocks in eth_getBlockByNumber / eth_getBlockByHash answers (single or
// batched). The follower is pointed at it by its rpc_url, so it goes through the real HTTP path.

export interface BlockFields {
  number: string
  hash: string
  parentHash: string
  timestamp: string
}

/** Answers the block as it should be sent (the one given, or a changed copy). */
export type BlockRewrite = (block: BlockFields) => BlockFields

const BLOCK_METHODS = new Set(['eth_getBlockByNumber', 'eth_getBlockByHash'])

interface RpcMessage {
  id?: unknown
  method?: string
  result?: unknown
}

export class RpcRewritingProxy {
  private server: http.Server | undefined
  /** Applied to every block answer while set. */
  rewrite: BlockRewrite | undefined
  /** Block answers rewritten (changed) so far. */
  rewritten = 0
  url = ''

  constructor(private readonly target: string) {}

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        void this.forward(Buffer.concat(chunks).toString('utf8')).then(
          (body) => res.writeHead(200, { 'content-type': 'application/json' }).end(body),
          (e: unknown) => res.writeHead(502, { 'content-type': 'text/plain' }).end(String(e)),
        )
      })
    })
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this.url
  }

  private async forward(body: string): Promise<string> {
    const res = await fetch(this.target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    const text = await res.text()
    const rewrite = this.rewrite
    if (!rewrite) return text
    const request = JSON.parse(body) as RpcMessage | RpcMessage[]
    const methods = new Map((Array.isArray(request) ? request : [request]).map((m) => [JSON.stringify(m.id), m.method]))
    const answer = JSON.parse(text) as RpcMessage | RpcMessage[]
    const change = (m: RpcMessage): RpcMessage => {
      if (!BLOCK_METHODS.has(methods.get(JSON.stringify(m.id)) ?? '') || m.result === null || typeof m.result !== 'object') return m
      const block = m.result as BlockFields
      const next = rewrite({ ...block })
      if (next.hash === block.hash && next.parentHash === block.parentHash && next.timestamp === block.timestamp) return m
      this.rewritten++
      return { ...m, result: { ...block, ...next } }
    }
    return JSON.stringify(Array.isArray(answer) ? answer.map(change) : change(answer))
  }

  async stop(): Promise<void> {
    const server = this.server
    this.server = undefined
    server?.closeAllConnections()
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  }
}

/** A hash no block has: `0x` and 64 hex digits derived from `seed`. */
export const fakeHash = (seed: string | bigint): string =>
  `0x${BigInt(`0x${Buffer.from(String(seed)).toString('hex')}`)
    .toString(16)
    .padStart(64, 'f')
    .slice(-64)}`
