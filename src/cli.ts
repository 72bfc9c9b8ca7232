import { existsSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { Command, CommanderError, Help, InvalidArgumentError, Option } from 'commander'
import { addToAllowlist, listAllowlist, removeFromAllowlist } from './keys/allowlist.js'
import { AllowlistNoteInput } from './keys/inputs.js'
import { parseInput } from './core/input.js'
import { jwksFileProblem } from './auth/session.js'
import { loadDocumentsFile, readDocuments, schemaProblems } from './graphql/documents.js'
import { systemClock } from './core/clock.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { migrationStatus, type MigrationStatus } from './db/migration-status.js'
import { checkDatabase } from './db/preflight.js'
import { DataDirBusyError, readLock } from './db/embedded-lock.js'
import { createLogger, setLogger } from './core/log.js'
import { readLocalMigrations } from './db/migrate.js'
import { packageRoot } from './core/paths.js'
import { commaList } from './core/formats.js'
import { createProgress } from './core/progress.js'
import { applyRuntimeFlags } from './core/runtime-flags.js'
import { normalizeAddress } from './wallets/address.js'
import { loadSourcesFile, SourcesConfigError } from './sources/config.js'
import { BootError, prepareDatabase, startGateway, unreachableDatabase } from './server.js'
import type { Db } from './db/client.js'
import type { ImportCounts } from './importer/write.js'
import {
  adminApiOps,
  DELIVERY_STATUSES,
  parseEventTypes,
  runWebhooksCommand,
  serviceOps,
  WEBHOOKS_SUMMARY,
  WEBHOOKS_USAGE,
  webhookServiceFor,
  type WebhooksCommand,
} from './webhooks/cli.js'

// The CLI prints for people: plain sentences on stdout/stderr, exit code 0 on success, 1 on a
// failure it can explain, 2 on a usage error (commander: unknown commands and options, with a
// suggestion). Never a stack trace unless DEBUG is set.

const out = (line: string) => process.stdout.write(`${line}\n`)
/**
 * A running gateway's sentences for people (its banner, the signal it got): on stderr, so its
 * stdout holds nothing but the JSON log lines a collector parses.
 */
const say = (line: string) => process.stderr.write(`${line}\n`)

/** In embedded mode, the URL of a gateway that holds the data directory right now. */
async function runningGateway(config: Config): Promise<string | undefined> {
  if (config.storage.mode !== 'embedded' || config.storage.dataDir.startsWith('memory://')) return undefined
  const holder = await readLock(config.storage.dataDir)
  if (!holder) return undefined
  if (!holder.url) throw new DataDirBusyError(config.storage.dataDir, holder)
  return holder.url
}

/** Calls a running gateway's admin API (used when it owns the embedded data directory). */
export async function callAdmin(config: Config, url: string, method: string, path: string, body?: string): Promise<unknown> {
  if (!config.adminToken) {
    throw new BootError(
      `The data directory is in use by the gateway at ${url}; set ADMIN_TOKEN (the same as the gateway's) so this command can use its admin API, or stop the gateway.`,
    )
  }
  const res = await fetch(`${url}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${config.adminToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body,
  })
  const json = (await res.json().catch(() => ({}))) as { data?: unknown; error?: { message?: string } }
  if (!res.ok) throw new BootError(`The gateway at ${url} refused: ${json.error?.message ?? res.statusText}`)
  return json.data
}

/** Runs `work` with direct database access, unless a running gateway owns the data directory. */
export async function withDatabase<T>(config: Config, work: (db: Db) => Promise<T>): Promise<T> {
  const { db, lock } = await prepareDatabase(config)
  try {
    return await work(db.prisma)
  } finally {
    await db.close()
    await lock?.release()
  }
}

/** The commands, in the order `vaultgate --help` lists them (the deploy files are checked against these names). */
export const commands = {
  start: {
    usage: 'vaultgate start',
    summary: 'Serve the API (GraphQL at /graphql, REST under /v1, explorer at /, reference at /docs); the default command.',
  },
  migrate: {
    usage: 'vaultgate migrate',
    summary: 'Apply pending database migrations (start does this too, unless MIGRATE_ON_START=false).',
  },
  allowlist: {
    usage: 'vaultgate allowlist add|remove|list [ADDRESS] [NOTE]',
    summary: 'Manage the wallets that may hold API keys; removing one revokes its key.',
  },
  import: {
    usage: 'vaultgate import FILE',
    summary: 'Load a JSON document of vaults, compositions, vault_snapshots and transactions in one transaction.',
  },
  webhooks: { usage: WEBHOOKS_USAGE, summary: WEBHOOKS_SUMMARY },
  dev: {
    usage: 'vaultgate dev token --wallet ADDRESS',
    summary: 'Development only: a local signing key, a wallet-session token for ADDRESS, and the settings and curl to create an API key with it.',
  },
  documents: {
    usage: 'vaultgate documents check FILE',
    summary: 'Check a trusted documents file (persisted-documents.json) against the schema before it is deployed; writes nothing.',
  },
  sources: {
    usage: 'vaultgate sources check [FILE]',
    summary: 'Check a sources file (default VAULT_SOURCES_FILE), its chains and its contracts before they are followed; writes nothing.',
  },
} as const satisfies Record<string, { usage: string; summary: string }>

/**
 * The configuration, checked before anything is written: the variables themselves, then what
 * they point at (AUTH_JWKS_FILE's key set, DATABASE_URL's database), all problems in one message.
 */
export async function checkedConfig(source: Record<string, string | undefined>): Promise<Config> {
  const problems: string[] = []
  let config: Config | undefined
  try {
    config = loadConfig(source)
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e
    problems.push(...e.problems)
  }
  if (source.AUTH_JWKS_FILE) {
    const problem = jwksFileProblem(source.AUTH_JWKS_FILE)
    if (problem) problems.push(problem)
  }
  if (config?.graphql.documentsFile) {
    try {
      loadDocumentsFile(config.graphql.documentsFile)
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e
      problems.push(...e.problems)
    }
  }
  if (config?.sourcesFile) {
    try {
      await loadSourcesFile(config.sourcesFile)
    } catch (e) {
      if (!(e instanceof SourcesConfigError)) throw e
      problems.push(...e.issues.map((issue) => `VAULT_SOURCES_FILE: ${issue}`))
    }
  }
  // The database is asked whenever DATABASE_URL and its timeout are valid, whatever else is wrong.
  let database: Extract<Config['storage'], { mode: 'postgres' }> | undefined
  let timeoutMs = 0
  try {
    const c = loadConfig({ DATABASE_URL: source.DATABASE_URL, DB_CONNECT_TIMEOUT_MS: source.DB_CONNECT_TIMEOUT_MS })
    if (c.storage.mode === 'postgres') [database, timeoutMs] = [c.storage, c.pool.connectTimeoutMs]
  } catch {
    // already among the problems above
  }
  const check = database ? await checkDatabase(database.url, timeoutMs) : ({ ok: true } as const)
  if (!check.ok && 'problem' in check) problems.push(check.problem)
  if (problems.length > 0 || !config) throw new ConfigError(problems)
  if (!check.ok && 'unreachable' in check) throw unreachableDatabase(config, check.unreachable)
  return config
}

/** Loads and checks the configuration (`overrides`: command-line options that win over the environment), then applies it to the process. */
async function configure(overrides: Record<string, string | undefined> = {}): Promise<Config> {
  const given = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined))
  const config = await checkedConfig({ ...process.env, ...given })
  applyRuntimeFlags(config)
  setLogger(createLogger(config.logLevel))
  return config
}

async function startCommand(options: { port?: string; host?: string }): Promise<void> {
  const config = await configure({ PORT: options.port, HOST: options.host })
  const progress = createProgress()
  const gateway = await startGateway(config, { progress }).finally(() => progress.end())
  // GraphiQL is off in production unless GRAPHIQL=true: the banner offers only what is served.
  say(`\nvaultgate is ready: ${gateway.url}/graphql${config.graphql.graphiql ? ' (GraphiQL in a browser)' : ''}, REST under ${gateway.url}/v1`)
  say(`  vault explorer ${gateway.url}/   API reference ${gateway.url}/docs   OpenAPI ${gateway.url}/openapi.json   metrics ${gateway.url}/metrics`)
  const h = await gateway.hints?.catch(() => undefined)
  if (h) {
    say(`Demo data: try vault ids ${h.vaultIds.slice(0, 4).join(', ')}`)
    for (const w of h.wallets) say(`  wallet ${w.address} (vault ${w.vaultId}: ${w.note})`)
    const [v] = h.vaultIds
    if (v) say(`  curl ${gateway.url}/graphql -H 'content-type: application/json' -d '{"query":"{ vault(id: \\"${v}\\") { id name tvl sharePrice } }"}'`)
  }
  say('')
  let stopping = false
  // SIGTERM comes from an orchestrator (docker stop, Kubernetes): keep serving for
  // SHUTDOWN_DELAY_MS with /readyz at 503 while load balancers take this instance out. SIGINT is
  // a person at a terminal: no delay.
  const stop = (signal: 'SIGTERM' | 'SIGINT') => {
    if (stopping) process.exit(1)
    stopping = true
    const delayMs = signal === 'SIGTERM' ? config.shutdownDelayMs : 0
    say(
      delayMs > 0
        ? `vaultgate: ${signal} received; /readyz answers 503, serving ${delayMs} ms more, then finishing in-flight requests…`
        : `vaultgate: ${signal} received, finishing in-flight requests…`,
    )
    gateway.close({ delayMs }).then(
      () => process.exit(0),
      () => process.exit(1),
    )
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
  await new Promise(() => {})
}

/** What the database records, without opening (or creating) an embedded data directory that holds no database yet. */
async function readMigrationStatus(config: Config): Promise<MigrationStatus> {
  if (config.storage.mode === 'embedded' && !config.storage.dataDir.startsWith('memory://') && !existsSync(path.join(config.storage.dataDir, 'PG_VERSION'))) {
    return { applied: [], pending: (await readLocalMigrations()).map((m) => m.name), failed: [], unknown: [] }
  }
  const { db, lock } = await prepareDatabase(config, { migrate: false })
  try {
    return await migrationStatus(db.prisma)
  } finally {
    await db.close()
    await lock?.release()
  }
}

async function migrateCommand(options: { dryRun?: boolean; status?: boolean }): Promise<void> {
  const config = await configure()
  const url = await runningGateway(config)
  if (url) {
    out(`The gateway at ${url} owns the data directory and applied its migrations when it started; nothing to do.`)
    return
  }
  if (options.dryRun || options.status) {
    const status = await readMigrationStatus(config)
    if (options.status) {
      for (const name of status.applied) out(`applied  ${name}`)
      for (const name of status.unknown) out(`applied  ${name}  (not in this version: a newer one migrated the database)`)
      for (const name of status.failed) out(`failed   ${name}  (started and never finished: resolve it before migrating again)`)
      for (const name of status.pending) out(`pending  ${name}`)
    }
    if (status.pending.length === 0) out('The database is up to date.')
    else if (options.dryRun) out(`Would apply ${status.pending.length} migration(s): ${status.pending.join(', ')}`)
    else out(`${status.pending.length} migration(s) pending; \`vaultgate migrate\` applies them.`)
    return
  }
  const progress = createProgress()
  progress.update('Applying migrations')
  const { db, lock, applied } = await prepareDatabase(config).finally(() => progress.end())
  await db.close()
  await lock?.release()
  out(applied.length ? `Applied ${applied.length} migration(s): ${applied.join(', ')}` : 'The database is up to date.')
}

const IMPORT_HELP = `
The document (every section optional; docs/operations.md "Loading data"):
  {"vaults": […], "compositions": […], "vault_snapshots": […], "transactions": […]}
  vaults           vault records (id, name, chain, symbol, status, tvl, share_price, …)
  compositions     allocation snapshots {"vault_id","as_of","positions":[…]}
  vault_snapshots  share price and TVL history {"vault_id","as_of","share_price","tvl","base_asset_price_usd"}
  transactions     deposits, withdrawals and redeems, of any status
It is validated whole, then written in one transaction; the same ids imported again update in place.
Prints what it wrote: "Imported 2 vault(s), 45 composition snapshot(s), 24 vault snapshot(s), 4 transaction(s)."`

async function importCommand(file: string): Promise<void> {
  const config = await configure()
  const progress = createProgress()
  let counts: unknown
  try {
    progress.update(`Reading ${file}`)
    const text = await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
      throw new BootError(`Cannot read ${file}: ${e.code === 'ENOENT' ? 'no such file' : e.message}.`)
    })
    const url = await runningGateway(config)
    if (url) {
      progress.update(`Importing through the gateway at ${url}`)
      counts = await callAdmin(config, url, 'POST', '/import', text)
    } else {
      progress.update(`Parsing ${file}`)
      // The gateway's rules (src/importer/json.ts): not JSON, or a key given twice, is refused.
      const { parseImportJson } = await import('./importer/json.js')
      const doc = parseImportJson(text, `${file} is not valid JSON.`)
      const { importDocument } = await import('./importer/write.js')
      progress.update('Opening the database')
      counts = await withDatabase(config, (db) => {
        progress.update('Validating the document')
        return importDocument(doc, db, { onProgress: (p) => progress.update(`Writing ${p.kind}`, p.done, p.total) })
      })
    }
  } finally {
    progress.end()
  }
  const c = counts as ImportCounts
  out(`Imported ${c.vaults} vault(s), ${c.compositions} composition snapshot(s), ${c.vault_snapshots} vault snapshot(s), ${c.transactions} transaction(s).`)
}

interface AllowlistEntryJson {
  address: string
  note: string | null
  createdAtMs: number
}

/** `allowlist add|remove|list`: through the running gateway's admin API when it owns the embedded data directory. */
async function allowlistCommand(action: 'add' | 'remove' | 'list', rawAddress?: string, noteWords: string[] = []): Promise<void> {
  const config = await configure()
  if (action === 'list') {
    const url = await runningGateway(config)
    const items = url
      ? ((await callAdmin(config, url, 'GET', '/allowlist')) as { items: AllowlistEntryJson[] }).items
      : await withDatabase(config, async (db) =>
          (await listAllowlist(db)).map((e) => ({ address: e.address, note: e.note, createdAtMs: e.createdAt.getTime() })),
        )
    if (items.length === 0) out('The allowlist is empty.')
    for (const e of items) out(`${e.address}  ${new Date(e.createdAtMs).toISOString()}${e.note ? `  ${e.note}` : ''}`)
    return
  }
  const address = normalizeAddress(rawAddress)
  if (address === undefined) throw new BootError(`${rawAddress} is not an EVM address (0x followed by 40 hex digits).`)
  // The admin route's rule (src/keys/inputs.ts), also when the CLI writes the database itself.
  const note = noteWords.length > 0 ? (parseInput(AllowlistNoteInput, { note: noteWords.join(' ') }).note ?? undefined) : undefined
  const url = await runningGateway(config)
  if (action === 'add') {
    const { added } = url
      ? ((await callAdmin(config, url, 'PUT', `/allowlist/${address}`, note === undefined ? undefined : JSON.stringify({ note }))) as { added: boolean })
      : await withDatabase(config, (db) => addToAllowlist(db, address, note))
    out(added ? `Added ${address} to the allowlist.` : `${address} was already on the allowlist${note === undefined ? '' : '; its note is updated'}.`)
    return
  }
  const { removed, revokedKeyId } = url
    ? ((await callAdmin(config, url, 'DELETE', `/allowlist/${address}`)) as { removed: boolean; revokedKeyId: string | null })
    : await withDatabase(config, (db) => removeFromAllowlist(db, address, systemClock))
  const key = revokedKeyId ? ` Its API key ${revokedKeyId} is revoked.` : ''
  out(removed ? `Removed ${address} from the allowlist.${key}` : `${address} was not on the allowlist.${key}`)
}

/** `webhooks …` (src/webhooks/cli.ts): through the running gateway's admin API when it owns the embedded data directory. */
async function webhooksCommand(command: WebhooksCommand): Promise<void> {
  const config = await configure()
  const url = await runningGateway(config)
  const lines = url
    ? await runWebhooksCommand(
        command,
        adminApiOps((method, path, body) => callAdmin(config, url, method, path, body)),
      )
    : await withDatabase(config, (db) => runWebhooksCommand(command, serviceOps(webhookServiceFor(config, db))))
  for (const line of lines) out(line)
}

/**
 * `sources check [FILE]`: the file's problems, then what each chain and contract answers (src/sources/check.ts),
 * one finding a line. Needs no database. Exit code 1 when the follower would leave something out.
 */
async function sourcesCheckCommand(file: string | undefined, command: Command): Promise<void> {
  const target = file ?? (process.env.VAULT_SOURCES_FILE || undefined)
  if (!target) command.error('sources check needs a FILE, or VAULT_SOURCES_FILE set.', { exitCode: 2 })
  const { checkSources } = await import('./sources/check.js')
  const findings = await checkSources(target!)
  for (const f of findings) out(`${f.level.padEnd('warning'.length)}  ${f.path}: ${f.message}`)
  const errors = findings.filter((f) => f.level === 'error').length
  const warnings = findings.filter((f) => f.level === 'warning').length
  if (errors > 0) throw new BootError(`${target}: ${errors} error(s), ${warnings} warning(s); the follower would leave out what the errors name.`)
  out(`${target}: ready to follow (${warnings} warning(s)).`)
}

/**
 * `documents check FILE`: what in a trusted documents file (GRAPHQL_DOCUMENTS_FILE) would not serve,
 * one problem a line: its format, ids that are not their document's SHA-256, documents the
 * schema refuses. Needs no database. Exit code 1 on any problem.
 */
async function documentsCheckCommand(file: string): Promise<void> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (e) {
    throw new BootError(`${file}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}).`)
  }
  const { documents, problems } = readDocuments(text)
  const { schema } = await import('./graphql/schema/index.js')
  problems.push(...schemaProblems(documents, schema))
  for (const p of problems) out(`error  ${p}`)
  if (problems.length > 0) throw new BootError(`${file}: ${problems.length} problem(s); the gateway would refuse to start with it or answer errors.`)
  out(`${file}: ${documents.size} document(s), all valid against the schema.`)
}

function rootHelp(): string {
  const width = Math.max(...Object.values(commands).map((c) => c.usage.length))
  return [
    'vaultgate — GraphQL gateway for investment-vault data and wallet API keys',
    '',
    'Usage:',
    ...Object.values(commands).map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    '',
    'Options:',
    '  -v, --version  print the version',
    "  -h, --help     print this help; `vaultgate COMMAND --help` prints a command's options",
    '',
    'Configuration comes from environment variables (docs/configuration.md; every one is in .env.example).',
    '',
  ].join('\n')
}

const port = (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw new InvalidArgumentError('It must be an integer from 0 to 65535.')
  return value
}

/**
 * A command group (`allowlist`, `webhooks`, `sources`) called without a known subcommand: a usage
 * error (exit code 2) naming the actions, with a suggestion when the word is close to one.
 */
function refuseAction(group: Command, action: string | undefined, actions: string[]): never {
  if (action === undefined)
    group.error(`${group.name()} needs ${actions.length > 1 ? `${actions.slice(0, -1).join(', ')} or ${actions.at(-1)}` : actions[0]}.`, { exitCode: 2 })
  const near = actions.filter((a) => distance(a, action.toLowerCase()) <= 2)
  group.error(`unknown ${group.name()} action '${action}'${near.length ? `\n(Did you mean ${near.join(' or ')}?)` : ''}`, { exitCode: 2 })
}

/** Edit distance, for "did you mean" on the allowlist actions (commander suggests commands and options itself). */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1))
      diagonal = above
    }
  }
  return row[b.length]!
}

const version = (JSON.parse(readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version

/** A word for a POSIX shell: quoted only when it needs to be. */
const shellWord = (s: string) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`)

/** `dev token` (src/auth/dev-token.ts): prints what a local try of key management needs; never opens the database. */
async function devTokenCommand(options: { wallet: string }): Promise<void> {
  // Before the configuration is read: production's required settings must not hide this refusal.
  if (process.env.NODE_ENV === 'production') throw new BootError('dev token is for development only; it refuses to run with NODE_ENV=production.')
  const address = normalizeAddress(options.wallet)
  if (address === undefined) throw new BootError(`${options.wallet} is not an EVM address (0x followed by 40 hex digits).`)
  const config = loadConfig(process.env)
  // The key lives in DATA_DIR also when the data are in PostgreSQL (an in-memory database has no folder: the default one then).
  const dataDir =
    config.storage.mode === 'embedded' && !config.storage.dataDir.startsWith('memory://') ? config.storage.dataDir : (process.env.DATA_DIR ?? './.data')
  const { devToken, DEV_TOKEN_TTL_S } = await import('./auth/dev-token.js')
  const dev = await devToken(dataDir.startsWith('memory://') ? './.data' : dataDir, address)
  const settings = Object.entries(dev.env).map(([k, v]) => `${k}=${shellWord(v)}`)
  out(`${dev.created ? 'Created' : 'Reusing'} the development signing key; its public key set is ${dev.jwksFile}.`)
  out('Start the gateway with these settings (restart a running one), so it trusts the key and allowlists the wallet:')
  out('')
  out(`  ${settings.join(' ')} npm start`)
  out('')
  out(`A wallet-session token for ${address}, valid ${DEV_TOKEN_TTL_S / 3600} hours (until ${dev.expiresAt.toISOString()}):`)
  out('')
  out(`  TOKEN=${dev.token}`)
  out('')
  out('Create an API key with it:')
  out('')
  out(
    `  curl -s -X POST http://127.0.0.1:${config.port}/v1/apiKey -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -d '{"name":"local try"}'`,
  )
}

/** The vaultgate command line. Errors and exits are left to the caller (exitOverride). */
export function createProgram(): Command {
  const program = new Command('vaultgate')
    .version(version, '-v, --version', 'print the version')
    .helpOption('-h, --help', 'print the help')
    .exitOverride()
    .showHelpAfterError('Run `vaultgate --help` for the commands.')
    .configureOutput({ outputError: (text, write) => write(`vaultgate: ${text.replace(/^error: /, '')}`) })
    .configureHelp({ formatHelp: (cmd, helper) => (cmd.parent ? Help.prototype.formatHelp.call(helper, cmd, helper) : rootHelp()) })
  program
    .command('start')
    .description(commands.start.summary)
    .option('--port <number>', 'HTTP port (overrides PORT; 0 picks a free one)', port)
    .option('--host <address>', 'interface to listen on (overrides HOST; 0.0.0.0 in a container)')
    .action(startCommand)
  program
    .command('migrate')
    .description(commands.migrate.summary)
    .addOption(new Option('--dry-run', 'list the pending migrations without applying them').conflicts('status'))
    .addOption(new Option('--status', 'list the applied and the pending migrations'))
    .action(migrateCommand)
  const allowlist = program
    .command('allowlist')
    .description(commands.allowlist.summary)
    .usage('add|remove|list [ADDRESS] [NOTE]')
    .argument('[action]')
    .action((action: string | undefined) => refuseAction(allowlist, action, ['add', 'remove', 'list']))
  allowlist
    .command('add')
    .description('Add a wallet (or update its note).')
    .argument('<address>', 'the wallet, 0x followed by 40 hex digits')
    .argument('[note...]', 'a note for people (who the wallet is)')
    .action((address: string, note: string[]) => allowlistCommand('add', address, note))
  allowlist
    .command('remove')
    .description('Remove a wallet; its API key is revoked.')
    .argument('<address>', 'the wallet')
    .action((address: string) => allowlistCommand('remove', address))
  allowlist
    .command('list')
    .description('List the wallets with when they were added and their notes.')
    .action(() => allowlistCommand('list'))
  program.command('import').description(commands.import.summary).argument('<file>', 'the JSON document').addHelpText('after', IMPORT_HELP).action(importCommand)
  const webhooks = program
    .command('webhooks')
    .description(commands.webhooks.summary)
    .usage('add|list|remove|deliveries …')
    .argument('[action]')
    .action((action: string | undefined) => refuseAction(webhooks, action, ['add', 'list', 'remove', 'deliveries']))
  const eventTypes = (text: string) => {
    try {
      return parseEventTypes(text)
    } catch (e) {
      throw new InvalidArgumentError((e as Error).message)
    }
  }
  webhooks
    .command('add')
    .description('Register an endpoint; prints its signing secret, once.')
    .argument('<url>', 'where events are POSTed (https; http too outside production)')
    .argument(
      '<types>',
      'comma-separated event types, or all: vault.updated, transaction.created, transaction.status_changed, redeem.claimable, redeem.completed, transaction.removed',
      eventTypes,
    )
    .argument('[vaults]', 'comma-separated vault ids (every vault when left out)', commaList)
    .action((url: string, types: string[], vaults: string[] | undefined) =>
      webhooksCommand({ action: 'add', url, eventTypes: types, ...(vaults ? { vaultIds: vaults } : {}) }),
    )
  webhooks
    .command('list')
    .description('List the endpoints (secrets are never shown again).')
    .action(() => webhooksCommand({ action: 'list' }))
  webhooks
    .command('remove')
    .description('Delete an endpoint with its deliveries.')
    .argument('<id>', 'the endpoint id')
    .action((id: string) => webhooksCommand({ action: 'remove', id }))
  webhooks
    .command('deliveries')
    .description("An endpoint's deliveries, newest first, with every attempt.")
    .argument('<id>', 'the endpoint id')
    .addOption(new Option('--status <status>', 'only deliveries in this state').choices(DELIVERY_STATUSES))
    .option('--limit <n>', 'deliveries per page, 1 to 200 (default 50)', (v: string) => {
      if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 200) throw new InvalidArgumentError('It must be an integer from 1 to 200.')
      return Number(v)
    })
    .option('--cursor <cursor>', "the previous page's cursor (printed after a full page)")
    .action((id: string, options: { status?: string; limit?: number; cursor?: string }) => webhooksCommand({ action: 'deliveries', id, ...options }))
  const dev = program
    .command('dev')
    .description(commands.dev.summary)
    .usage('token --wallet ADDRESS')
    .argument('[action]')
    .action((action: string | undefined) => refuseAction(dev, action, ['token']))
  dev
    .command('token')
    .description(
      'Write (or reuse) a signing key under DATA_DIR/dev-auth/, print the settings that make the gateway trust it and allowlist the wallet, a token, and the curl that creates an API key. Refused under NODE_ENV=production.',
    )
    .requiredOption('--wallet <address>', 'the wallet the token holds, 0x followed by 40 hex digits')
    .action(devTokenCommand)
  const documents = program
    .command('documents')
    .description(commands.documents.summary)
    .usage('check FILE')
    .argument('[action]')
    .action((action: string | undefined) => refuseAction(documents, action, ['check']))
  documents
    .command('check')
    .description(
      'Validate a documents file as GraphQL Code Generator writes it ({ "sha256:<hex>": "<document>" }): each id the SHA-256 of its document, each document valid against the schema.',
    )
    .argument('<file>', 'the documents file (persisted-documents.json)')
    .action((file: string) => documentsCheckCommand(file))
  const sources = program
    .command('sources')
    .description(commands.sources.summary)
    .usage('check [FILE]')
    .argument('[action]')
    .action((action: string | undefined) => refuseAction(sources, action, ['check']))
  sources
    .command('check')
    .description('Validate the file, then ask each chain (chain id, head, Multicall3) and each vault (ERC-4626 reads, ERC-7540 if so configured).')
    .argument('[file]', 'the sources file (default: VAULT_SOURCES_FILE)')
    .action((file: string | undefined, _options: unknown, command: Command) => sourcesCheckCommand(file, command))
  // A usage error points at the help of the command it is about.
  const pointToHelp = (cmd: Command, name: string) => {
    for (const sub of cmd.commands) {
      sub.showHelpAfterError(`Run \`${name} ${sub.name()} --help\` for its usage.`)
      pointToHelp(sub, `${name} ${sub.name()}`)
    }
  }
  pointToHelp(program, 'vaultgate')
  return program
}

export async function main(argv: string[]): Promise<void> {
  try {
    // `vaultgate` alone starts the gateway (as `npm start` does).
    await createProgram().parseAsync(argv.length === 0 ? ['start'] : argv, { from: 'user' })
  } catch (e) {
    if (e instanceof CommanderError) process.exit(e.exitCode === 0 ? 0 : 2) // help and version, or a usage error already printed
    const known =
      e instanceof ConfigError || e instanceof BootError || e instanceof DataDirBusyError || (e as { extensions?: { code?: string } }).extensions?.code
    process.stderr.write(`vaultgate: ${known ? (e as Error).message : `failed: ${(e as Error).message ?? String(e)}`}\n`)
    if (process.env.DEBUG) process.stderr.write(`${(e as Error).stack}\n`)
    process.exit(1)
  }
}
