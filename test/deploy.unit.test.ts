import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'
import { commands } from '../src/cli.js'
import { configVariables, loadConfig } from '../src/config.js'
import { packageRoot } from '../src/core/paths.js'

// This machine cannot build images or pull base images: what can be proved here is that the
// Dockerfile, compose.yaml and the Caddyfile agree with the CLI and the configuration, and that the
// image's command is the one scripts/smoke-package.sh runs on the packed package.

const read = (file: string) => readFileSync(path.join(packageRoot, file), 'utf8')
const defaultPort = loadConfig({}).port

interface Stage {
  from: string
  instructions: { op: string; args: string }[]
}

/** The Dockerfile's build stages and their instructions (continuations joined, comments dropped). */
function dockerStages(text: string): Stage[] {
  const stages: Stage[] = []
  for (const line of text.replace(/\\\n/g, ' ').split('\n')) {
    const m = /^\s*([A-Za-z]+)\s+(.*\S)\s*$/.exec(line)
    if (!m || line.trimStart().startsWith('#')) continue
    const [, op, args] = m as unknown as [string, string, string]
    if (op.toUpperCase() === 'FROM') stages.push({ from: args, instructions: [] })
    else stages.at(-1)!.instructions.push({ op: op.toUpperCase(), args })
  }
  return stages
}

const argsOf = (stage: Stage, op: string) => stage.instructions.filter((i) => i.op === op).map((i) => i.args)

/** `KEY=value KEY2=value` of ENV instructions. */
const envOf = (stage: Stage) => Object.fromEntries(argsOf(stage, 'ENV').flatMap((a) => a.split(/\s+/).map((kv) => kv.split('=') as [string, string])))

/** The command scripts/smoke-package.sh starts the gateway with (its `start_cmd=(…)` array). */
function smokeStartCommand(): string[] {
  const m = /^start_cmd=\(([^)]*)\)$/m.exec(read('scripts/smoke-package.sh'))
  if (!m) throw new Error('scripts/smoke-package.sh has no start_cmd=(…) line')
  return m[1]!.trim().split(/\s+/)
}

/** compose's `${NAME:-default}` / `${NAME}` interpolation, with nothing set in the environment. */
const interpolate = (value: string) => value.replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_m, _name, fallback: string | undefined) => fallback ?? '')
/** The configuration of a service's environment as compose hands it over (interpolated, nothing set). */
const configOf = (env: Record<string, string> | undefined) =>
  loadConfig(Object.fromEntries(Object.entries(env ?? {}).map(([k, v]) => [k, interpolate(String(v))])))

interface ComposeService {
  image?: string
  build?: unknown
  command?: string[]
  entrypoint?: string[]
  environment?: Record<string, string>
  ports?: string[]
  volumes?: string[]
  depends_on?: Record<string, { condition: string }>
  restart?: string
  profiles?: string[]
  healthcheck?: { test: string[] }
}

const compose = parse(read('compose.yaml'), { merge: true }) as { services: Record<string, ComposeService> }
const services = compose.services
const stages = dockerStages(read('Dockerfile'))
const image = stages.at(-1)!
const cmd = JSON.parse(argsOf(image, 'CMD')[0]!) as string[]
/** The services that run the vaultgate image. */
const vaultgate = Object.entries(services).filter(([, s]) => s.image === 'vaultgate:local')
const gateways = vaultgate.filter(([name]) => name !== 'migrate')

describe('the Dockerfile', () => {
  it('builds with dev dependencies and runs as a non-root user with production dependencies only, on the Node of .nvmrc', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2)
    const build = stages[0]!
    expect(argsOf(build, 'RUN').join('\n')).toMatch(/npm ci --no-audit --no-fund --ignore-scripts/)
    expect(argsOf(build, 'RUN').join('\n')).toMatch(/npm pack/)
    expect(stages.some((s) => argsOf(s, 'RUN').some((r) => /npm ci --omit=dev --omit=optional .*--ignore-scripts/.test(r)))).toBe(true)
    // Every stage on the same base image, pinned by digest.
    for (const stage of stages) expect(stage.from.split(/\s+/)[0]).toMatch(new RegExp(`^node:${read('.nvmrc').trim()}-slim@sha256:[0-9a-f]{64}$`))
    expect(image.from).toMatch(/^node:\S+$/)
    expect(argsOf(image, 'RUN').join('\n')).not.toMatch(/npm (ci|install)/) // nothing installed in the final stage itself
    expect(argsOf(image, 'USER')).toEqual(['node'])
  })

  it('runs exactly the command scripts/smoke-package.sh starts the packed gateway with', () => {
    expect(cmd).toEqual(['node', 'bin/vaultgate.js', 'start'])
    expect(smokeStartCommand()).toEqual(cmd)
    expect(Object.keys(commands)).toContain(cmd[2])
    // smoke-package.sh installs the dependencies the way the image does.
    expect(read('scripts/smoke-package.sh')).toMatch(/npm ci --omit=dev --omit=optional --no-audit --no-fund --ignore-scripts/)
  })

  it('listens on every interface on the default port, keeps DATA_DIR on a volume, and checks /readyz with node itself', () => {
    const env = envOf(image)
    expect(Object.keys(env).filter((k) => !configVariables.includes(k))).toEqual([])
    expect(() => loadConfig(env)).not.toThrow()
    expect(env).toMatchObject({ HOST: '0.0.0.0', NODE_ENV: 'production', PORT: String(defaultPort) })
    expect(argsOf(image, 'EXPOSE')).toEqual([String(defaultPort)])
    expect(argsOf(image, 'VOLUME')).toEqual([env.DATA_DIR])
    const [healthcheck] = argsOf(image, 'HEALTHCHECK')
    const probe = JSON.parse(healthcheck!.replace(/^.*?CMD\s+/, '')) as string[]
    expect(probe.slice(0, 2)).toEqual(['node', '-e'])
    expect(probe[2]).toContain("fetch('http://127.0.0.1:' + (process.env.PORT || 4000) + '/readyz')")
    expect(probe[2]).toContain(`|| ${defaultPort})`)
  })
})

describe('compose.yaml', () => {
  it('gives the vaultgate services only settings the configuration reads, all valid', () => {
    expect(vaultgate.length).toBeGreaterThanOrEqual(3)
    for (const [name, service] of vaultgate) {
      const env = Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]))
      expect(
        Object.keys(env).filter((k) => !configVariables.includes(k)),
        name,
      ).toEqual([])
      expect(() => loadConfig(env), name).not.toThrow()
    }
  })

  it('points the gateways at its own PostgreSQL and Redis', () => {
    const pg = services.postgres!.environment!
    for (const [name, service] of vaultgate) {
      const db = new URL(service.environment!.DATABASE_URL!)
      expect([db.hostname, db.port, db.username, db.password, db.pathname], name).toEqual([
        'postgres',
        '5432',
        pg.POSTGRES_USER,
        pg.POSTGRES_PASSWORD,
        `/${pg.POSTGRES_DB}`,
      ])
      expect(new URL(service.environment!.REDIS_URL!).host, name).toBe('redis:6379')
    }
  })

  it('migrates once, as its own step, before two replicas that do not migrate at start', () => {
    const migrate = services.migrate!
    expect(migrate.command).toEqual([...cmd.slice(0, 2), 'migrate'])
    expect(Object.keys(commands)).toContain(migrate.command![2])
    expect(migrate.restart).toBe('no')
    expect(migrate.depends_on).toEqual({ postgres: { condition: 'service_healthy' } })
    expect(gateways.map(([name]) => name)).toEqual(['gateway-1', 'gateway-2'])
    for (const [name, service] of gateways) {
      expect(service.command, name).toBeUndefined() // the image's CMD: start
      expect(configOf(service.environment).migrateOnStart, name).toBe(false)
      expect(service.depends_on?.migrate, name).toEqual({ condition: 'service_completed_successfully' })
    }
  })

  it('balances over every replica on the gateway port, checking /readyz, with the explorer on the host port', () => {
    const lb = services.lb!
    expect(lb.ports).toEqual([`\${VAULTGATE_PORT:-${defaultPort}}:80`])
    expect(Object.keys(lb.depends_on ?? {})).toEqual(gateways.map(([name]) => name))
    const caddyfile = read('deploy/Caddyfile')
    const upstreams = /reverse_proxy\s+([^{]+)\{/.exec(caddyfile)![1]!.trim().split(/\s+/)
    const port = (env: Record<string, string> | undefined) => configOf(env).port
    expect(upstreams).toEqual(gateways.map(([name, s]) => `${name}:${port({ ...envOf(image), ...s.environment })}`))
    expect(caddyfile).toMatch(/^\s*health_uri \/readyz$/m)
    expect(caddyfile).toMatch(/^:80 \{$/m)
  })
})

describe("compose.yaml's `replica` profile", () => {
  const primary = services.postgres!
  const standby = services['postgres-replica']!
  const pgEnv = primary.environment!
  /** `-c name=value` settings of the primary's command. */
  const settings = Object.fromEntries(primary.command!.flatMap((arg, i, all) => (all[i - 1] === '-c' ? [arg.split('=') as [string, string]] : [])))

  it('is the one profile, holding only the standby: a plain `docker compose up` is unchanged', () => {
    expect(Object.entries(services).flatMap(([name, s]) => (s.profiles ?? []).map((p) => `${name}:${p}`))).toEqual(['postgres-replica:replica'])
    // Nothing always started waits for it (compose refuses a dependency on a service left out).
    expect(Object.entries(services).filter(([, s]) => s.depends_on?.['postgres-replica'])).toEqual([])
  })

  it('lets the primary be streamed from: WAL for a standby, senders, and a replication line for other containers in the pg_hba file it uses', () => {
    expect(primary.command![0]).toBe('postgres') // the image's entrypoint still initialises an empty volume
    expect(settings).toMatchObject({ wal_level: 'replica', max_wal_senders: expect.stringMatching(/^[1-9]\d*$/) })
    const mount = primary.volumes!.find((v) => v.endsWith(`:${settings.hba_file}:ro`))
    expect(mount).toBeDefined()
    const hba = read(mount!.split(':')[0]!)
    const rules = hba
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'))
      .map((l) => l.trim().split(/\s+/))
    // The image's init scripts run over the local socket; the gateways and the standby over the network, with the password.
    expect(rules).toContainEqual(['local', 'all', 'all', 'trust'])
    expect(rules).toContainEqual(['host', 'all', 'all', 'all', 'scram-sha-256'])
    expect(rules).toContainEqual(['host', 'replication', 'all', 'all', 'scram-sha-256'])
  })

  it('bootstraps the standby from the primary with pg_basebackup --write-recovery-conf, on the same image, then runs it', () => {
    expect(standby.image).toBe(primary.image)
    expect(standby.depends_on).toEqual({ postgres: { condition: 'service_healthy' } })
    expect(standby.entrypoint).toEqual(['bash', '-ec'])
    const script = standby.command!.join('\n')
    // Compose would substitute a lone `$`: every shell variable is written `$$`.
    expect(script).not.toMatch(/(^|[^$])\$[A-Za-z{]/)
    const shell = script.replaceAll('$$', '$')
    const backup = /gosu postgres pg_basebackup (.*)$/m.exec(shell)![1]!.split(/\s+/)
    expect(backup).toEqual(
      expect.arrayContaining(['--host=postgres', `--username=${pgEnv.POSTGRES_USER}`, '--pgdata="$PGDATA"', '--wal-method=stream', '--write-recovery-conf']),
    )
    expect(standby.environment).toEqual({ PGPASSWORD: pgEnv.POSTGRES_PASSWORD })
    // Only into an empty data directory (a restart resumes streaming), and PostgreSQL runs it as its user.
    expect(shell).toMatch(/if \[ ! -s "\$PGDATA\/PG_VERSION" \]; then\n\s*gosu postgres pg_basebackup /)
    expect(shell).toMatch(/chmod 0700 "\$PGDATA"/)
    expect(shell.trim().split('\n').at(-1)).toBe('exec gosu postgres postgres')
    expect(standby.volumes).toEqual(['postgres-replica-data:/var/lib/postgresql/data'])
    expect(standby.healthcheck?.test).toEqual(primary.healthcheck?.test)
  })

  it('points the gateways at the standby through DATABASE_REPLICA_URLS, as compose.yaml and docs/operations.md run it', () => {
    const command = `DATABASE_REPLICA_URLS=postgresql://${pgEnv.POSTGRES_USER}:${pgEnv.POSTGRES_PASSWORD}@postgres-replica:5432/${pgEnv.POSTGRES_DB} docker compose --profile replica up --build`
    expect(read('compose.yaml')).toContain(`#   ${command}`)
    expect(read('docs/operations.md')).toContain(command)
    const url = command.split(' ')[0]!.split('=')[1]!
    for (const [name, service] of vaultgate) {
      expect(service.environment!.DATABASE_REPLICA_URLS, name).toBe(`\${DATABASE_REPLICA_URLS:-}`) // compose's interpolation, not JavaScript's
      // Without it, every read on the primary; with it, the standby.
      expect(configOf(service.environment).replicas.urls, name).toEqual([])
      const env = Object.fromEntries(Object.entries(service.environment!).map(([k, v]) => [k, interpolate(String(v))]))
      expect(loadConfig({ ...env, DATABASE_REPLICA_URLS: url }).replicas.urls, name).toEqual([url])
    }
  })
})
