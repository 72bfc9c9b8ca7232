import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../../src/core/log.js'

const capture = () => {
  const lines: string[] = []
  const logger = createLogger(
    'trace',
    new Writable({
      write: (chunk, _enc, done) => {
        lines.push(String(chunk))
        done()
      },
    }),
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

  it('cut any error message at 300 characters', () => {
    const { logger, text } = capture()
    logger.error({ err: new Error(`boom ${'x'.repeat(5000)}`) }, 'unexpected error')
    expect(JSON.parse(text()).err.message).toHaveLength(301)
    expect(text()).not.toContain('x'.repeat(400))
  })
})
