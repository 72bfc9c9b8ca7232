import { AppError } from './errors.js'

/**
 * A request's deadline. Its AbortSignal and timer are made on first use: a request answered without
 * running GraphQL (a cached read, a health check) never pays for them.
 */
export class Deadline {
  #timer?: NodeJS.Timeout
  #signal?: AbortSignal

  /** `at`: epoch ms when it passes; `ms`: the budget it was given (for the error message). */
  constructor(
    readonly at: number,
    readonly ms: number,
    /** Aborts too when this does (the client went away). */
    private readonly client?: AbortSignal,
  ) {}

  static in(ms: number, client?: AbortSignal): Deadline {
    return new Deadline(Date.now() + ms, ms, client)
  }

  /** Aborts at the deadline (with `unavailable`) or when the client goes away. */
  get signal(): AbortSignal {
    if (!this.#signal) {
      const controller = new AbortController()
      this.#timer = setTimeout(() => controller.abort(timeoutError(this.ms)), Math.max(0, this.at - Date.now()))
      this.#signal = this.client ? AbortSignal.any([controller.signal, this.client]) : controller.signal
    }
    return this.#signal
  }

  /** A deadline as long as this one's budget, counted from now, without the client's signal: for work that outlives the request. */
  detached(): Deadline {
    return Deadline.in(this.ms)
  }

  /** Clears the timer (the request is answered); the signal stays as it is. */
  end(): void {
    clearTimeout(this.#timer)
  }
}

export const timeoutError = (ms: number) => new AppError('unavailable', `The request took longer than ${ms} ms; try again shortly.`)

/**
 * Runs `work` under `deadline` and ends it when `work` settles (a background refresh of a cached
 * answer: its own deadline, never the original request's, whose timer is cleared when it is
 * answered and whose client going away must not abort work done for later callers).
 */
export async function underDeadline<T>(deadline: Deadline, work: (deadline: Deadline) => Promise<T>): Promise<T> {
  try {
    return await work(deadline)
  } finally {
    deadline.end()
  }
}
