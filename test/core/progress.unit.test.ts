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

  it('off a terminal (pipes, files, CI): nothing for short work, then a plain line every 5 s with rows/s', () => {
    let clock = 0
    const pipe = stream(false)
    const progress = createProgress(pipe, { now: () => clock })
    progress.update('Reading data.json')
    clock = 1000
    progress.update('Writing transactions', 5000, 200000) // the step starts at 1 s
    clock = 4999
    progress.update('Writing transactions', 20000, 200000)
    expect(pipe.writes).toEqual([])
    clock = 5000
    progress.update('Writing transactions', 40000, 200000)
    clock = 9000
    progress.update('Writing transactions', 80000, 200000) // too soon after the last line
    clock = 10_000
    progress.update('Writing transactions', 90000, 200000)
    progress.end('Imported 200000 transaction(s).')
    expect(pipe.writes).toEqual([
      'Writing transactions 40000/200000 (20%), 10000 rows/s\n',
      'Writing transactions 90000/200000 (45%), 10000 rows/s\n',
      'Imported 200000 transaction(s).\n',
    ])
    const quick = stream(false)
    const short = createProgress(quick)
    short.update('Writing transactions', 1, 2)
    short.end()
    expect(quick.writes).toEqual([])
  })

  it('writes nothing on end when nothing was shown', () => {
    const tty = stream(true)
    createProgress(tty).end()
    expect(tty.writes).toEqual([])
  })
})
