import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../../src/core/log.js'

const capture = (now?: () => number) => {
  const lines: string[] = []
  const logger = createLogger(
    'trace',
    new Writable({
      write: (chunk, _enc, done) => {
        lines.push(String(chunk))
        done()
      },
    }),
    { now },
  )
  return { logger, text: () => lines.join('') }
}

describe('error logs', () => {
  it("keep Prisma's sentence of what was wrong, without the argument values it quotes", () => {
    const { logger, text } = capture()
    const secret = 'vaultgate_3yQnC7ZxHBkBk9SXxTbmmBsmXPYCpeHvHXSLS4Rz9Gf5'
    const err = Object.assign(
      new Error(
        `\nInvalid \`prisma.vault.findMany()\` invocation:\n\n{\n  cursor: {\n    id: "${secret}"\n  },\n  take: 51\n}\n\nArgument \`id\`: Invalid value provided. Expected Int, provided String.`,
      ),
      { name: 'PrismaClientValidationError' },
    )
    logger.error({ err }, 'resolver failed')
    const line = JSON.parse(text())
    expect(line.err.message).toBe('Invalid Prisma call: Argument `id`: Invalid value provided. Expected Int, provided String.')
    expect(text()).not.toContain(secret)
  })

  it('cut any error message at 128 characters, and withhold long or secret-looking values inside it', () => {
    const { logger, text } = capture()
    logger.error({ err: new Error(`boom ${'x y'.repeat(5000)}`) }, 'unexpected error')
    expect(JSON.parse(text()).err.message).toHaveLength(129)
    const second = capture()
    second.logger.error({ err: new Error(`bad value "${'z'.repeat(200)}" near vaultgate_3yQnC7ZxHBkBk9SXxTbmmBsmXPYCpeHvHXSLS4Rz9Gf5`) }, 'unexpected error')
    expect(JSON.parse(second.text()).err.message).toBe(
      'bad value (a value of 200 characters, not repeated here) near vaultgate_(a value of 44 characters, not repeated here)',
    )
  })

  it("log only an error's type, codes, message, frames and cause: never a driver's detail, statement or parameters", () => {
    const { logger, text } = capture()
    const cause = Object.assign(new Error('connection closed'), { code: 'ECONNRESET', detail: 'Key (wallet)=(0xsecret) already exists.' })
    const err = Object.assign(new Error('query failed', { cause }), {
      code: 'P2010',
      meta: { query: 'SELECT $1', params: ['secret-param'] },
      where: 'PL/pgSQL',
    })
    logger.error({ err }, 'unexpected error')
    const { err: logged } = JSON.parse(text())
    expect(Object.keys(logged).sort()).toEqual(['cause', 'code', 'message', 'stack', 'type'])
    expect(logged.cause).toMatchObject({ type: 'Error', message: 'connection closed', code: 'ECONNRESET' })
    expect(text()).not.toContain('secret')
  })
})

describe('repeated log lines', () => {
  it('write one identical warning or error (same message, same error) per 10 s, the next one counting those left out; request lines always', () => {
    let now = 1_000_000
    const { logger, text } = capture(() => now)
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
    for (let i = 0; i < 5; i++) logger.error({ requestId: `r${i}`, err: refused }, 'database unavailable')
    // Another failure under the same message is written.
    logger.error({ requestId: 'other', err: new TypeError('x is undefined') }, 'database unavailable')
    logger.warn('Redis unavailable')
    for (let i = 0; i < 3; i++) logger.info({ status: 200 }, 'request')
    now += 9_999
    logger.error({ requestId: 'r5', err: refused }, 'database unavailable')
    now += 1
    logger.error({ requestId: 'r6', err: refused }, 'database unavailable')
    const lines = text()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .map(({ msg, requestId, suppressed }) => ({ msg, requestId, suppressed }))
    expect(lines).toEqual([
      { msg: 'database unavailable', requestId: 'r0', suppressed: undefined },
      { msg: 'database unavailable', requestId: 'other', suppressed: undefined },
      { msg: 'Redis unavailable', requestId: undefined, suppressed: undefined },
      { msg: 'request', requestId: undefined, suppressed: undefined },
      { msg: 'request', requestId: undefined, suppressed: undefined },
      { msg: 'request', requestId: undefined, suppressed: undefined },
      { msg: 'database unavailable', requestId: 'r6', suppressed: 5 },
    ])
  })
})
