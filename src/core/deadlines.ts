import { AppError } from './errors.js'

/**
 * What a deadline needs of its client's connection: an AbortSignal, or anything that can say it
 * closed (the node:http fast path answers from the socket without making a signal per request).
 */
export type ClientSignal = Pick<AbortSignal, 'aborted' | 'addEventListener'>

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
    private readonly client?: ClientSignal,
  ) {}

  static in(ms: number, client?: ClientSignal): Deadline {
    return new Deadline(Date.now() + ms, ms, client)
  }

  /** Aborts at the deadline (with `unavailable`) or when the client goes away (with clientClosedRequest). */
  get signal(): AbortSignal {
    if (!this.#signal) {
      const controller = new AbortController()
      this.#timer = setTimeout(() => controller.abort(timeoutError(this.ms)), Math.max(0, this.at - Date.now()))
      const client = this.client
      if (client?.aborted) controller.abort(clientClosedRequest())
      else client?.addEventListener('abort', () => controller.abort(clientClosedRequest()), { once: true })
      this.#signal = controller.signal
    }
    return this.#signal
  }

  /** The client closed its connection before the answer (the request is counted with status 499). */
  get clientGone(): boolean {
    return this.client?.aborted ?? false
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

/**
 * What the work of a request whose client went away stops with: nobody reads the answer, so it is
 * no failure of ours to log (nginx's 499 "client closed request" in the request line and metrics).
 */
export const CLIENT_CLOSED_REQUEST = 499
export const clientClosedRequest = () => new AppError('unavailable', 'The client closed the request.', { status: CLIENT_CLOSED_REQUEST })

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
