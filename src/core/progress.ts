// Progress of long CLI work (import, migrations, demo data, dataset generation) on stderr, only
// when stderr is a terminal: one line rewritten in place. Piped or redirected output (scripts, CI,
// log collectors) gets nothing, so it stays parseable.

export interface ProgressStream {
  isTTY?: boolean
  write(text: string): unknown
}

export interface Progress {
  /** Shows `label`, with `done / total` and a percentage when a total is known. */
  update(label: string, done?: number, total?: number): void
  /** Clears the line, then prints `message` on its own line when given. */
  end(message?: string): void
}

const CLEAR = '\r\x1b[2K'

export const silentProgress: Progress = { update() {}, end() {} }

/** A progress line on `stream` (default stderr); silent unless the stream is a TTY. */
export function createProgress(stream: ProgressStream = process.stderr, { intervalMs = 100, now = () => performance.now() } = {}): Progress {
  if (!stream.isTTY) return silentProgress
  let last = -Infinity
  let lastLabel = ''
  let shown = false
  return {
    update(label, done, total) {
      const finished = done !== undefined && total !== undefined && done >= total
      // Throttled, except a new step and a finished one, which are always shown.
      if (label === lastLabel && !finished && now() - last < intervalMs) return
      last = now()
      lastLabel = label
      shown = true
      const count = done === undefined ? '…' : total === undefined ? ` ${done}` : ` ${done}/${total} (${total === 0 ? 100 : Math.floor((done / total) * 100)}%)`
      stream.write(`${CLEAR}${label}${count}`)
    },
    end(message) {
      if (shown) stream.write(CLEAR)
      shown = false
      lastLabel = ''
      if (message) stream.write(`${message}\n`)
    },
  }
}
