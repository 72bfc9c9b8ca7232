import type { ServerResponse } from 'node:http'

// What a step answers (docs/adr/0005-one-pipeline.md): a status, headers with lowercase names,
// and either a body known whole (text or bytes; null for none) or a stream (an event stream, a
// large file). Grafserv's `Result` is the model: the core makes one, each adapter only writes it
// (`writeAnswer` to a node:http socket, `toResponse` for app.fetch).

export interface BodyAnswer {
  status: number
  headers: Record<string, string | string[]>
  body: string | Buffer | null
}

export interface StreamAnswer {
  status: number
  headers: Record<string, string | string[]>
  stream: ReadableStream<Uint8Array>
}

export type Answer = BodyAnswer | StreamAnswer

export const isStream = (a: Answer): a is StreamAnswer => 'stream' in a

/** A Web Response (Yoga's, Hono's) as an answer: a stream stays a stream when it is one by nature; other bodies are read. */
export async function answerOf(response: Response): Promise<Answer> {
  const headers: Record<string, string | string[]> = {}
  // Lowercase: @whatwg-node's Headers (Yoga's) keep the case they were given.
  response.headers.forEach((value, name) => {
    headers[name.toLowerCase()] = value
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) headers['set-cookie'] = cookies
  if (!response.body) return { status: response.status, headers, body: null }
  if (/^(text\/event-stream|multipart\/)/i.test(response.headers.get('content-type') ?? '')) return { status: response.status, headers, stream: response.body }
  return { status: response.status, headers, body: Buffer.from(await response.arrayBuffer()) }
}

/** An answer as a Web Response (app.fetch). */
export function toResponse(answer: Answer): Response {
  const headers = new Headers()
  for (const name in answer.headers) {
    const value = answer.headers[name]!
    if (Array.isArray(value)) for (const v of value) headers.append(name, v)
    else headers.set(name, value)
  }
  if (isStream(answer)) return new Response(answer.stream, { status: answer.status, headers })
  const body = answer.body
  return new Response(typeof body === 'string' || body === null ? body : new Uint8Array(body.buffer as ArrayBuffer, body.byteOffset, body.byteLength), {
    status: answer.status,
    headers,
  })
}

/** Writes an answer to a node:http response; a body known whole always gets its Content-Length. */
export async function writeAnswer(res: ServerResponse, answer: Answer): Promise<void> {
  if (!isStream(answer)) {
    if (answer.body !== null) answer.headers['content-length'] = String(Buffer.byteLength(answer.body))
    res.writeHead(answer.status, answer.headers)
    res.end(answer.body ?? undefined)
    return
  }
  res.writeHead(answer.status, answer.headers)
  // A client that goes away cancels the stream: an event stream then ends and unregisters instead
  // of writing its heartbeat to a closed socket for ever.
  const reader = answer.stream.getReader()
  const cancel = () => void reader.cancel().catch(() => {})
  res.once('close', cancel)
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      res.write(value)
    }
  } finally {
    res.off('close', cancel)
  }
  res.end()
}
