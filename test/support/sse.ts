// A GraphQL-over-SSE client for tests ("distinct connections" mode): POSTs the operation with
// Accept: text/event-stream and reads the stream as it arrives: `next` events (their parsed data),
// `complete`, and the heartbeat comments in between.

export interface SseEvent {
  event: string
  data: any
}

export interface Subscription {
  status: number
  headers: Headers
  /** Heartbeat comments (`:` lines) received so far. */
  readonly comments: number
  /** The next event; rejects when none arrives within `ms` (or the stream ends first). */
  next(ms?: number): Promise<SseEvent>
  /** Events received and not yet taken by next(). */
  readonly buffered: SseEvent[]
  /** Resolves when the server has ended the stream. */
  readonly ended: Promise<void>
  /** The client goes away. */
  close(): void
}

export type Fetch = (input: string, init: RequestInit) => Promise<Response>

export async function subscribe(
  fetcher: Fetch,
  url: string,
  query: string,
  variables: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<Subscription> {
  const abort = new AbortController()
  const res = await fetcher(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify({ query, variables }),
    signal: abort.signal,
  })
  const buffered: SseEvent[] = []
  let comments = 0
  let wake: (() => void) | undefined
  let done = false
  let endedResolve!: () => void
  const ended = new Promise<void>((r) => (endedResolve = r))
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  const read = async () => {
    let text = ''
    try {
      for (;;) {
        const { done: end, value } = await reader.read()
        if (end) break
        text += value
        let cut: number
        while ((cut = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, cut)
          text = text.slice(cut + 2)
          let event = 'message'
          const data: string[] = []
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments++
            else if (line.startsWith('event:')) event = line.slice(6).trim()
            else if (line.startsWith('data:')) data.push(line.slice(5).trim())
          }
          if (block.startsWith(':') && data.length === 0 && event === 'message') continue
          const raw = data.join('\n')
          buffered.push({ event, data: raw ? JSON.parse(raw) : null })
          wake?.()
        }
      }
    } catch {
      // Aborted by close().
    } finally {
      done = true
      endedResolve()
      wake?.()
    }
  }
  void read()
  return {
    status: res.status,
    headers: res.headers,
    get comments() {
      return comments
    },
    buffered,
    ended,
    async next(ms = 2000) {
      const deadline = Date.now() + ms
      while (buffered.length === 0) {
        if (done) throw new Error('the stream ended without another event')
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`no event within ${ms} ms`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
      }
      return buffered.shift()!
    },
    // Aborting reaches a server over a socket; an in-process response's body is cancelled instead.
    close: () => {
      abort.abort()
      reader.cancel().catch(() => {})
    },
  }
}
