import { describe, expect, it } from 'vitest'
import { createProgress } from '../../src/core/progress.js'

function stream(isTTY: boolean) {
  const writes: string[] = []
  return { isTTY, writes, write: (text: string) => writes.push(text) }
}

describe('progress line', () => {
  it('rewrites one line on a terminal: steps, counts with a percentage, then clears it', () => {
    let clock = 0
    const tty = stream(true)
    const progress = createProgress(tty, { intervalMs: 100, now: () => clock })
    progress.update('Reading data.json')
    progress.update('Writing transactions', 5000, 20000)
    clock = 50
    progress.update('Writing transactions', 10000, 20000) // throttled: same step, too soon
    clock = 150
    progress.update('Writing transactions', 15000, 20000)
    clock = 160
    progress.update('Writing transactions', 20000, 20000) // finished: always shown
    progress.end('Imported 20000 transaction(s).')
    expect(tty.writes).toEqual([
      '\r\x1b[2KReading data.json…',
      '\r\x1b[2KWriting transactions 5000/20000 (25%)',
      '\r\x1b[2KWriting transactions 15000/20000 (75%)',
      '\r\x1b[2KWriting transactions 20000/20000 (100%)',
      '\r\x1b[2K',
      'Imported 20000 transaction(s).\n',
    ])
  })

  it('stays quiet when the stream is not a terminal (pipes, files, CI)', () => {
    const pipe = stream(false)
    const progress = createProgress(pipe)
    progress.update('Writing transactions', 1, 2)
    progress.end()
    expect(pipe.writes).toEqual([])
  })

  it('writes nothing on end when nothing was shown', () => {
    const tty = stream(true)
    createProgress(tty).end()
    expect(tty.writes).toEqual([])
  })
})
