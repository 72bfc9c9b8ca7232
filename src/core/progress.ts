// Progress of long CLI work (import, migrations, demo data, dataset generation) on stderr. On a
// terminal: one line rewritten in place. Piped or redirected (scripts, CI, log collectors): work
// that lasts gets a plain line every few seconds with its rate (rows/s), short work nothing, so the
// output of a quick command stays just its result.

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

/** How often work that is not on a terminal says where it is. */
export const PLAIN_PROGRESS_INTERVAL_MS = 5000

/**
 * Calls `emit` at most every `intervalMs` (the first time `intervalMs` after it is made), with the
 * rate of the current step since it began, in rows per second.
 */
export function throttledProgress(
  emit: (label: string, done: number | undefined, total: number | undefined, rowsPerSecond: number | undefined) => void,
  { intervalMs = PLAIN_PROGRESS_INTERVAL_MS, now = () => performance.now() } = {},
): (label: string, done?: number, total?: number) => void {
  let lastLine = now()
  let step = { label: '', at: lastLine }
  return (label, done, total) => {
    const at = now()
    if (label !== step.label) step = { label, at }
    if (at - lastLine < intervalMs) return
    lastLine = at
    const seconds = (at - step.at) / 1000
    emit(label, done, total, done !== undefined && seconds > 0 ? Math.round(done / seconds) : undefined)
  }
}

/** `done/total (pct%)`, or `done`, or nothing. */
const countOf = (done?: number, total?: number) =>
  done === undefined ? '' : total === undefined ? ` ${done}` : ` ${done}/${total} (${total === 0 ? 100 : Math.floor((done / total) * 100)}%)`

/**
 * Progress on `stream` (default stderr): a line rewritten in place on a terminal; elsewhere a
 * plain line every PLAIN_PROGRESS_INTERVAL_MS (`plainIntervalMs`) with rows/s, none for short work.
 */
export function createProgress(
  stream: ProgressStream = process.stderr,
  { intervalMs = 100, plainIntervalMs = PLAIN_PROGRESS_INTERVAL_MS, now = () => performance.now() } = {},
): Progress {
  if (!stream.isTTY) {
    const update = throttledProgress(
      (label, done, total, rate) => stream.write(`${label}${countOf(done, total)}${rate === undefined ? '' : `, ${rate} rows/s`}\n`),
      { intervalMs: plainIntervalMs, now },
    )
    return {
      update,
      end(message) {
        if (message) stream.write(`${message}\n`)
      },
    }
  }
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
      stream.write(`${CLEAR}${label}${done === undefined ? '…' : countOf(done, total)}`)
    },
    end(message) {
      if (shown) stream.write(CLEAR)
      shown = false
      lastLabel = ''
      if (message) stream.write(`${message}\n`)
    },
  }
}
