import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { AppError } from '../core/errors.js'
import type { ChunkedSection, ImportSource, ImportSummary } from './prepare.js'

// An import document parsed, validated and serialised in a worker thread: a 100 MB document took
// the gateway's event loop for 16.8 s when all of that ran on it (docs/performance.md "Imports").
// The bytes are moved to the worker (not copied); the worker is gone once the writer is done, and
// the document's memory with it.

type FromWorker =
  | { kind: 'summary'; summary: ImportSummary }
  | { kind: 'chunk'; json: string; rows: number }
  | { kind: 'end' }
  | { kind: 'refused'; code: AppError['code']; message: string }
  | { kind: 'failed'; message: string }

/** The worker's module next to this one: compiled (.js), or the source under tsx and vitest (.ts, loaded through tsx). */
function workerEntry(): { url: URL; execArgv?: string[] } {
  const js = new URL('./parse-worker.js', import.meta.url)
  if (existsSync(fileURLToPath(js))) return { url: js }
  // A worker inherits the process' execArgv: `--import tsx` when the CLI runs from source, not under vitest.
  const tsx = process.execArgv.some((a) => /\btsx\b/.test(a))
  return { url: new URL('./parse-worker.ts', import.meta.url), execArgv: tsx ? undefined : [...process.execArgv, '--import', 'tsx'] }
}

/**
 * Parses and validates `bytes` (a JSON import document) in a worker thread. Refuses with the same
 * `bad_request` as importDocument; `notJson` is the sentence for bytes that are not JSON.
 */
export function parseOffThread(bytes: Uint8Array, { notJson = 'The import document is not valid JSON.' } = {}): Promise<ImportSource> {
  const { url, execArgv } = workerEntry()
  const copy = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice()
  const worker = new Worker(url, {
    workerData: { bytes: copy, notJson },
    transferList: [copy.buffer as ArrayBuffer],
    ...(execArgv ? { execArgv } : {}),
  })
  let waiting: { resolve: (m: FromWorker) => void; reject: (e: Error) => void } | undefined
  let failure: Error | undefined
  const fail = (e: Error) => {
    failure ??= e
    waiting?.reject(failure)
    waiting = undefined
  }
  worker.on('error', fail)
  worker.on('exit', (code) => fail(new Error(`the import worker exited (${code})`)))
  // Messages that arrive while nobody waits (the chunk asked for ahead) wait here.
  const arrived: FromWorker[] = []
  worker.on('message', (m: FromWorker) => {
    const w = waiting
    waiting = undefined
    if (w) w.resolve(m)
    else arrived.push(m)
  })
  const receive = () =>
    new Promise<FromWorker>((resolve, reject) => {
      const next = arrived.shift()
      if (next) resolve(next)
      else if (failure) reject(failure)
      else waiting = { resolve, reject }
    })
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    worker.removeAllListeners('exit')
    void worker.terminate()
  }
  return receive().then(
    (first) => {
      if (first.kind !== 'summary') {
        close()
        if (first.kind === 'refused') throw new AppError(first.code, first.message)
        throw new Error(`the import worker failed: ${first.kind === 'failed' ? first.message : first.kind}`)
      }
      return {
        summary: first.summary,
        async *chunks(section: ChunkedSection, size: number) {
          worker.postMessage({ kind: 'chunks', section, size })
          for (;;) {
            const m = await receive()
            if (m.kind !== 'chunk') return
            // The worker serialises the next chunk while this one is written.
            worker.postMessage({ kind: 'next' })
            yield { json: m.json, rows: m.rows }
          }
        },
        close,
      }
    },
    (e: unknown) => {
      close()
      throw e
    },
  )
}
