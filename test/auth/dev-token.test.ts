import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, type GatewayProcess, gatewayStorage, runCli, startGatewayProcess } from '../support/process.js'

// `vaultgate dev token` (src/auth/dev-token.ts) is what docs/keys.md offers a newcomer for a local
// try of key management: what it prints must be enough, as printed, to create an API key.

const WALLET = '0xAbCdEf0123456789aBcDeF0123456789ABCDEF01'

/** The printed lines: the settings before `npm start`, the `TOKEN=` assignment and the curl. */
function printed(stdout: string) {
  const lines = stdout.split('\n').map((l) => l.trim())
  const start = lines.find((l) => l.endsWith(' npm start'))!
  const settings = Object.fromEntries(
    start
      .replace(/ npm start$/, '')
      .split(' ')
      .map((w) => w.split(/=(.*)/s).slice(0, 2) as [string, string]),
  )
  return { settings, tokenLine: lines.find((l) => l.startsWith('TOKEN='))!, curl: lines.find((l) => l.startsWith('curl '))! }
}

const shell = (script: string) =>
  new Promise<string>((resolve, reject) => execFile('sh', ['-c', script], { timeout: 30_000 }, (e, stdout) => (e ? reject(e) : resolve(stdout))))

describe('vaultgate dev token', () => {
  const storage = gatewayStorage('vaultgate-dev-token-')
  let keyDir: string
  let gateway: GatewayProcess | undefined
  beforeAll(async () => {
    keyDir = await mkdtemp(path.join(tmpdir(), 'vaultgate-dev-key-'))
  })
  afterAll(async () => {
    await gateway?.stop()
    await rm(keyDir, { recursive: true, force: true })
  })
  // On PostgreSQL the key still lives under DATA_DIR; with PGlite, DATA_DIR is the database's folder.
  const env = () => ({ DATA_DIR: path.join(keyDir, 'data'), ...storage() })

  it('prints settings, a token and a curl that, run as printed, create an API key on a gateway started with them', async () => {
    const port = String(await freePort())
    const cli = await runCli(['dev', 'token', '--wallet', WALLET], { ...env(), PORT: port })
    expect(cli.stderr).toBe('')
    expect(cli.code).toBe(0)
    const { settings, tokenLine, curl } = printed(cli.stdout)
    const dataDir = env().DATA_DIR
    expect(settings).toEqual({
      AUTH_JWKS_FILE: path.join(path.resolve(dataDir), 'dev-auth', 'jwks.json'),
      AUTH_ISSUER: 'vaultgate-dev',
      AUTH_AUDIENCE: 'vaultgate-dev',
      ALLOWLIST: WALLET.toLowerCase(),
    })
    expect(curl).toContain(`http://127.0.0.1:${port}/v1/apiKey`)

    gateway = await startGatewayProcess({ ...env(), ...settings, PORT: port })
    const answer = await shell(`${tokenLine}\n${curl} -w '\\n%{http_code}'`)
    const [body, status] = answer.split('\n')
    expect(status).toBe('200')
    const created = JSON.parse(body!)
    expect(created.status).toBe('ok')
    expect(created.data).toMatchObject({ keyPrefix: 'vaultgate', name: 'local try', revokedAtMs: null })
    expect(created.data.apiKey).toMatch(/^vaultgate_[1-9A-HJ-NP-Za-km-z]{44}$/)

    // A second run reuses the key: the gateway already running accepts its new token too.
    const jwks = await readFile(settings.AUTH_JWKS_FILE!, 'utf8')
    const again = await runCli(['dev', 'token', '--wallet', WALLET], { ...env(), PORT: port })
    expect(again.code).toBe(0)
    expect(again.stdout).toMatch(/^Reusing the development signing key/)
    expect(await readFile(settings.AUTH_JWKS_FILE!, 'utf8')).toBe(jwks)
    const second = printed(again.stdout)
    const [, status2] = (await shell(`${second.tokenLine}\n${second.curl} -w '\\n%{http_code}'`)).split('\n')
    expect(status2).toBe('200')
  })

  it('refuses under NODE_ENV=production with one line and exit code 1, writing nothing', async () => {
    const dataDir = path.join(keyDir, 'production')
    const r = await runCli(['dev', 'token', '--wallet', WALLET], { NODE_ENV: 'production', DATA_DIR: dataDir })
    expect(r).toEqual({ code: 1, stdout: '', stderr: 'vaultgate: dev token is for development only; it refuses to run with NODE_ENV=production.\n' })
    expect(existsSync(dataDir)).toBe(false)
  })
})
