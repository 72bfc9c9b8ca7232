import type { MiddlewareHandler } from 'hono'
import { AppError } from '../../core/errors.js'
import type { AppEnv } from '../env.js'

/**
 * Answers `unavailable` after `ms` whatever the handler is waiting for (the handler's own work is
 * left to finish or fail). For probes such as /readyz, which must answer even when the database
 * neither answers nor refuses (a network partition).
 */
export function answerWithin(ms: number, message: string): MiddlewareHandler<AppEnv> {
  return async (_c, next) => {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new AppError('unavailable', message)), ms)
    })
    const work = next()
    work.catch(() => {})
    try {
      await Promise.race([work, late])
    } finally {
      clearTimeout(timer)
    }
  }
}
