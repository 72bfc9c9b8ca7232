import { afterEach, describe, expect, it } from 'vitest'
import * as log from '../../src/core/log.js'
import { createTestApp, type TestApp } from '../support/app.js'

// A gateway made in process (createApp, as every test does) logs at its LOG_LEVEL, not at the
// process default: before this held, a test run printed about 2,000 request lines.
describe('createApp', () => {
  let t: TestApp | undefined
  afterEach(async () => {
    await t?.close()
    t = undefined
  })

  it('gives the process logger the configured LOG_LEVEL', async () => {
    t = await createTestApp({ LOG_LEVEL: 'error' })
    expect(log.logger.level).toBe('error')
    expect(log.logger.isLevelEnabled('info')).toBe(false)
    expect(log.logger.isLevelEnabled('error')).toBe(true)
    await t.close()
    t = await createTestApp({ LOG_LEVEL: 'silent' })
    expect(log.logger.level).toBe('silent')
    expect(log.logger.isLevelEnabled('fatal')).toBe(false)
  })
})
