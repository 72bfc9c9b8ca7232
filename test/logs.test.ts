import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emptyPostgres, testBackend } from './support/db.js'
import { embeddedDataDir, startGatewayProcess, type GatewayProcess } from './support/process.js'

// What a log collector reads from a running gateway: its stdout, one JSON object a line with the
// level as a word; the sentences for people on stderr; probes out of the info stream.

describe('the gateway’s logs', () => {
  let gw: GatewayProcess
  let stdout = ''
  let stderr = ''
  beforeAll(async () => {
    const storage: Record<string, string> = testBackend === 'postgres' ? { DATABASE_URL: (await emptyPostgres()).url } : { DATA_DIR: await embeddedDataDir() }
    gw = await startGatewayProcess({ ...storage, SEED_DEMO: 'false', LOG_LEVEL: 'debug' })
    for (const path of ['/healthz', '/readyz', '/metrics', '/v1/vaults', '/nowhere']) await (await fetch(`${gw.url}${path}`)).text()
    expect(await gw.stop()).toBe(0)
    stdout = gw.stdout()
    stderr = gw.stderr()
  }, 120_000)
  afterAll(async () => {
    if (gw?.child.exitCode === null) await gw.stop('SIGKILL')
  })

  it('writes nothing but JSON lines on stdout, with string levels', () => {
    const lines = stdout.split('\n').filter(Boolean)
    expect(lines.length).toBeGreaterThan(5)
    const parsed = lines.map((l) => JSON.parse(l) as { level: unknown; msg: string })
    expect(new Set(parsed.map((l) => typeof l.level))).toEqual(new Set(['string']))
    expect(parsed.find((l) => l.msg.startsWith('vaultgate ready at'))).toMatchObject({ level: 'info', service: 'vaultgate' })
  })

  it('writes the banner and the signal it got on stderr', () => {
    expect(stderr).toContain(`\nvaultgate is ready: ${gw.url}/graphql (GraphiQL in a browser), REST under ${gw.url}/v1\n`)
    expect(stderr).toContain('SIGTERM received')
    expect(stdout).not.toContain('vaultgate is ready')
  })

  it('logs probes at debug and the other requests at info', () => {
    const requests = stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; level: string; route: string; status: number })
      .filter((l) => l.msg === 'request')
      .map(({ level, route, status }) => ({ level, route, status }))
    expect(requests).toEqual([
      { level: 'debug', route: '/healthz', status: 200 },
      { level: 'debug', route: '/readyz', status: 200 },
      { level: 'debug', route: '/metrics', status: 200 },
      { level: 'info', route: '/v1/vaults', status: 200 },
      { level: 'info', route: '/*', status: 404 },
    ])
  })
})

describe('the production banner', () => {
  it('does not offer GraphiQL, which production turns off', async () => {
    const storage: Record<string, string> = testBackend === 'postgres' ? { DATABASE_URL: (await emptyPostgres()).url } : { DATA_DIR: await embeddedDataDir() }
    const gw = await startGatewayProcess({ ...storage, SEED_DEMO: 'false', NODE_ENV: 'production' })
    try {
      // The banner follows the ready log line (stdout), which is what startGatewayProcess waits for.
      await expect.poll(() => gw.stderr()).toContain(`\nvaultgate is ready: ${gw.url}/graphql, REST under ${gw.url}/v1\n`)
      expect(gw.stderr()).not.toContain('GraphiQL')
      expect((await fetch(`${gw.url}/graphql`, { headers: { accept: 'text/html' } })).headers.get('content-type')).not.toMatch(/^text\/html/)
    } finally {
      await gw.stop('SIGKILL')
    }
  })
})
