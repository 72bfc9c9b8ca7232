import { parentPort, workerData } from 'node:worker_threads'
import { AppError } from '../core/errors.js'
import { CHUNKED_SECTIONS, parseAndValidate, sectionChunks, summarize, type ChunkedSection } from './prepare.js'

// The worker of src/importer/off-thread.ts: parses and validates the document it is given, posts
// its summary, then serialises the chunks the writer asks for, one message each (the writer holds
// one chunk at a time; the document lives and dies with this thread).

type Request = { kind: 'chunks'; section: ChunkedSection; size: number } | { kind: 'next' }

const port = parentPort!
const { bytes, notJson } = workerData as { bytes: Uint8Array; notJson: string }

try {
  const doc = parseAndValidate(bytes, notJson)
  port.postMessage({ kind: 'summary', summary: summarize(doc) })
  let current: Generator<{ json: string; rows: number }> | undefined
  port.on('message', (m: Request) => {
    if (m.kind === 'chunks' && CHUNKED_SECTIONS.includes(m.section)) current = sectionChunks(doc, m.section, m.size)
    const next = current?.next()
    port.postMessage(next && !next.done ? { kind: 'chunk', ...next.value } : { kind: 'end' })
  })
} catch (e) {
  port.postMessage(
    e instanceof AppError ? { kind: 'refused', code: e.code, message: e.message } : { kind: 'failed', message: e instanceof Error ? e.message : String(e) },
  )
}
