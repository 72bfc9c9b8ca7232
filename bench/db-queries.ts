import { createHash } from 'node:crypto'
import { BUCKET_ORIGIN, seriesWindow, type Timeframe } from '../src/vaults/composition.js'
import { DEFAULT_SPIKE_PCT, isSpike, realizedApyPct, tvlUsd } from '../src/vaults/performance.js'
import { decodeCursor, encodeCursor } from '../src/wallets/history-cursor.js'

// The database limit: for each scenario, the one SQL statement a hand-written handler needs to
// answer the same request, and the few lines of JavaScript that turn its rows into the same JSON
// shape. No ORM, no GraphQL, no validation beyond what the statement needs: what is left of the
// gateway's work when everything but the database round trip is taken away.

export type Query = (sql: string, params: unknown[]) => Promise<Record<string, any>[]>

export interface DbRequest {
  method: string
  path: string
  search: URLSearchParams
  body: string
}

/** Plain notation without trailing fractional zeros, as the gateway writes amounts. */
const amount = (v: string | null) => (v === null ? null : v.includes('.') ? v.replace(/\.?0+$/, '') : v)
const date = (v: Date | null) => (v === null ? null : v.toISOString().slice(0, 10))

const VAULT_COLUMNS = `v.id, v.name, v.chain, v.chain_id, v.symbol, v.base_asset, v.status, v.tvl::text, v.share_price::text,
  v.perf_fee_bps, v.mgmt_fee_bps, v.contract_address, v.max_deposit::text, v.min_deposit::text, v.deposit_paused,
  v.instant_liquidity, v.instant_slippage_max_bps, v.redeem_24h_threshold_pct_of_aum, v.redeem_48h_above_threshold,
  v.icon_dark, v.icon_light, v.api_endpoint, v.description, v.docs_url, v.inception_date, v.strategy_brief`

const restVault = (r: Record<string, any>) => ({
  id: r.id,
  name: r.name,
  chain: r.chain,
  chain_id: r.chain_id,
  symbol: r.symbol,
  base_asset: r.base_asset,
  status: r.status,
  tvl: amount(r.tvl),
  share_price: amount(r.share_price),
  perf_fee_bps: r.perf_fee_bps,
  mgmt_fee_bps: r.mgmt_fee_bps,
  contract: { address: r.contract_address },
  deposit_constraints: { max_deposit: amount(r.max_deposit), min_deposit: amount(r.min_deposit), paused: r.deposit_paused },
  withdraw_constraints: {
    instant_liquidity: r.instant_liquidity,
    instant_slippage_max_bps: r.instant_slippage_max_bps,
    redeem_24h_threshold_pct_of_aum: r.redeem_24h_threshold_pct_of_aum,
    redeem_48h_above_threshold: r.redeem_48h_above_threshold,
  },
  icons: { dark: r.icon_dark, light: r.icon_light },
  api_endpoint: r.api_endpoint,
  description: r.description,
  docs_url: r.docs_url,
  inception_date: date(r.inception_date),
  strategy_brief: r.strategy_brief,
})

const graphqlVault = (r: Record<string, any>) => ({
  id: r.id,
  name: r.name,
  chain: r.chain,
  chainId: r.chain_id,
  symbol: r.symbol,
  baseAsset: r.base_asset,
  status: r.status,
  tvl: amount(r.tvl),
  sharePrice: amount(r.share_price),
  perfFeeBps: r.perf_fee_bps,
  mgmtFeeBps: r.mgmt_fee_bps,
  contract: { address: r.contract_address },
  depositConstraints: { maxDeposit: amount(r.max_deposit), minDeposit: amount(r.min_deposit), paused: r.deposit_paused },
  withdrawConstraints: {
    instantLiquidity: r.instant_liquidity,
    instantSlippageMaxBps: r.instant_slippage_max_bps,
    redeem24hThresholdPctOfAum: r.redeem_24h_threshold_pct_of_aum,
    redeem48hAboveThreshold: r.redeem_48h_above_threshold,
  },
  icons: { dark: r.icon_dark, light: r.icon_light },
  apiEndpoint: r.api_endpoint,
  description: r.description,
  docsUrl: r.docs_url,
  inceptionDate: date(r.inception_date),
  strategyBrief: r.strategy_brief,
})

/** Grouped by platform in SQL, so the handler only maps rows. */
const LATEST_COMPOSITION = `LEFT JOIN LATERAL (
    SELECT cs.id, cs.as_of FROM composition_snapshots cs WHERE cs.vault_id = v.id AND cs.as_of <= now() ORDER BY cs.as_of DESC LIMIT 1
  ) s ON true
  LEFT JOIN LATERAL (
    SELECT json_agg(json_build_object('platform', g.platform, 'asset', g.asset, 'symbol', g.symbol, 'pct', g.pct, 'apyEstPct', g.apy, 'icon', g.icon) ORDER BY g.pct DESC, g.platform) AS positions
    FROM (
      SELECT a.platform, CASE WHEN count(DISTINCT a.asset) = 1 THEN min(a.asset) ELSE 'mixed' END AS asset,
        CASE WHEN count(DISTINCT a.symbol) = 1 THEN min(a.symbol) ELSE 'mixed' END AS symbol,
        round(sum(a.pct::numeric), 6)::float8 AS pct,
        round(sum(a.pct::numeric * a.apy_est_pct::numeric) / nullif(sum(a.pct::numeric), 0), 6)::float8 AS apy,
        (array_agg(a.icon ORDER BY a.pct DESC))[1] AS icon
      FROM allocations a WHERE a.snapshot_id = s.id GROUP BY a.platform
    ) g
  ) c ON true`

const SERIES_1Y = `WITH b AS (
    SELECT g.t FROM generate_series(
      greatest($2::timestamptz, date_bin('1 day', (SELECT min(as_of) FROM composition_snapshots WHERE vault_id = $1), '2001-01-01T00:00:00Z')),
      date_bin('1 day', now(), '2001-01-01T00:00:00Z'), '1 day') AS g(t)
  )
  SELECT b.t, a.platform AS label, round(sum(a.pct::numeric), 6)::float8 AS weight
  FROM b CROSS JOIN LATERAL (
    SELECT cs.id FROM composition_snapshots cs
    WHERE cs.vault_id = $1 AND cs.as_of < b.t + interval '1 day' AND cs.as_of <= now() ORDER BY cs.as_of DESC LIMIT 1
  ) s
  LEFT JOIN allocations a ON a.snapshot_id = s.id
  GROUP BY b.t, a.platform ORDER BY b.t`

const HISTORY_PAGE = `SELECT id, vault_id, type::text AS type, status::text AS status, amount::text AS amount, "timestamp", tx_hash
  FROM transactions WHERE address = $1 AND vault_id = $2 AND ($3::timestamptz IS NULL OR ("timestamp", id) < ($3::timestamptz, $4))
  ORDER BY "timestamp" DESC, id DESC LIMIT 51`

// The dashboard in one statement: 20 vaults with their grouped compositions, and the wallet's
// positions, the derived amounts rounded once to 18 decimals in SQL (the gateway does it in decimal.js).
const DASHBOARD = `SELECT json_build_object(
    'vaults', (SELECT json_agg(x ORDER BY x.id) FROM (
      SELECT v.id, v.name, v.chain, v.status, v.tvl::text AS tvl, v.share_price::text AS share_price, s.as_of, c.positions
      FROM vaults v ${LATEST_COMPOSITION} ORDER BY v.id LIMIT 20) x),
    'positions', (SELECT json_agg(p ORDER BY p.vault_id) FROM (
      SELECT q.vault_id, q.share_balance::text AS share_balance, q.share_price::text AS share_price, q.deposits::text AS total_deposits,
        round(q.share_balance * q.share_price * q.base_asset_price_usd, 18)::text AS position_value_usd,
        round(q.share_balance * q.share_price + q.outflow_amount - q.deposits, 18)::text AS all_time_earned,
        q.first_deposit_at
      FROM (
        SELECT t.vault_id, v.share_price, v.base_asset_price_usd,
          coalesce(sum(t.shares) FILTER (WHERE t.type = 'deposit' AND t.status = 'completed'), 0)
            - coalesce(sum(t.shares) FILTER (WHERE t.type IN ('withdraw', 'redeem') AND t.status IN ('completed', 'pending')), 0) AS share_balance,
          coalesce(sum(t.amount) FILTER (WHERE t.type = 'deposit' AND t.status = 'completed'), 0) AS deposits,
          coalesce(sum(t.amount) FILTER (WHERE t.type IN ('withdraw', 'redeem') AND t.status IN ('completed', 'pending')), 0) AS outflow_amount,
          min(t."timestamp") FILTER (WHERE t.type = 'deposit' AND t.status = 'completed') AS first_deposit_at
        FROM transactions t JOIN vaults v ON v.id = t.vault_id WHERE t.address = $1
        GROUP BY t.vault_id, v.share_price, v.base_asset_price_usd
        HAVING bool_or(t.type = 'deposit' AND t.status = 'completed')) q) p)
  ) AS doc`

const KEY_STATE = `SELECT k.id::text AS id, k.wallet, k.expires_at, k.revoked_at, (a.address IS NOT NULL) AS allowlisted
  FROM api_keys k LEFT JOIN allowlist a ON a.address = k.wallet WHERE k.digest = $1`

// Performance (decisions §9): the newest snapshot at or before `bound` whose share price is within
// SPIKE_PCT of its predecessor's, as one backward walk of the key.
const unflagged = (id: string, bound: string) => `(
    SELECT c.as_of, c.share_price FROM vault_snapshots c
    LEFT JOIN LATERAL (SELECT p.share_price FROM vault_snapshots p WHERE p.vault_id = c.vault_id AND p.as_of < c.as_of ORDER BY p.as_of DESC LIMIT 1) p ON true
    WHERE c.vault_id = ${id} AND c.as_of <= ${bound} AND (p.share_price IS NULL OR abs(c.share_price - p.share_price) * 100 <= ${DEFAULT_SPIKE_PCT} * p.share_price)
    ORDER BY c.as_of DESC LIMIT 1)`

/** One vault's series: per bucket its snapshot, that snapshot's predecessor and its 7-day s0. */
const PERFORMANCE_SERIES = `SELECT g.t, s.as_of, s.share_price::text AS share_price, s.tvl::text AS tvl, s.base_asset_price_usd::text AS price_usd,
    prev.share_price::text AS prev_price, s0.as_of AS s0_as_of, s0.share_price::text AS s0_price
  FROM generate_series(
    greatest($2::timestamptz, date_bin($3::interval, (SELECT min(as_of) FROM vault_snapshots WHERE vault_id = $1), $5::timestamptz)),
    $4::timestamptz, $3::interval) AS g(t)
  CROSS JOIN LATERAL (
    SELECT s.as_of, s.share_price, s.tvl, s.base_asset_price_usd FROM vault_snapshots s
    WHERE s.vault_id = $1 AND s.as_of < g.t + $3::interval AND s.as_of <= $6::timestamptz ORDER BY s.as_of DESC LIMIT 1) s
  LEFT JOIN LATERAL (SELECT p.share_price FROM vault_snapshots p WHERE p.vault_id = $1 AND p.as_of < s.as_of ORDER BY p.as_of DESC LIMIT 1) prev ON true
  LEFT JOIN LATERAL ${unflagged('$1', "s.as_of - interval '7 days'")} s0 ON true
  ORDER BY g.t`

/** The first 50 vaults by id, each with its newest unflagged snapshot and its 7- and 30-day s0. */
const PERFORMANCE_LIST = `SELECT v.id, s1.as_of, s1.share_price::text AS p1, w7.as_of AS t7, w7.share_price::text AS p7, w30.as_of AS t30, w30.share_price::text AS p30
  FROM (SELECT id FROM vaults ORDER BY id LIMIT 50) v
  LEFT JOIN LATERAL ${unflagged('v.id', 'now()')} s1 ON true
  LEFT JOIN LATERAL ${unflagged('v.id', "s1.as_of - interval '7 days'")} w7 ON true
  LEFT JOIN LATERAL ${unflagged('v.id', "s1.as_of - interval '30 days'")} w30 ON true
  ORDER BY v.id`

const iso = (v: string) => new Date(v).toISOString()

type Handler = (req: DbRequest, q: Query, match: RegExpMatchArray) => Promise<{ status: number; body: unknown }>

/** Routes of the database-limit server: the same requests the gateway gets, answered by hand. */
export const dbRoutes: { method: string; pattern: RegExp; operation?: string; handle: Handler }[] = [
  {
    method: 'GET',
    pattern: /^\/v1\/vaults\/([^/]+)$/,
    handle: async (_req, q, m) => {
      const [row] = await q(`SELECT ${VAULT_COLUMNS} FROM vaults v WHERE v.id = $1`, [decodeURIComponent(m[1]!)])
      return row ? { status: 200, body: restVault(row) } : { status: 404, body: { status: 'error' } }
    },
  },
  {
    method: 'GET',
    pattern: /^\/v1\/vaults\/([^/]+)\/composition\/series$/,
    handle: async (_req, q, m) => {
      const yearAgo = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) - 364 * 86_400_000)
      const rows = await q(SERIES_1Y, [decodeURIComponent(m[1]!), yearAgo.toISOString()])
      const points: { t: Date; w: Map<string, number> }[] = []
      for (const r of rows) {
        const last = points.at(-1)
        if (last && last.t.getTime() === r.t.getTime()) last.w.set(r.label, r.weight)
        else points.push({ t: r.t, w: new Map([[r.label, r.weight]]) })
      }
      const newest = points.at(-1)?.w ?? new Map()
      const labels = [...new Set(points.flatMap((p) => [...p.w.keys()]))].sort((a, b) => (newest.get(b) ?? 0) - (newest.get(a) ?? 0) || (a < b ? -1 : 1))
      return {
        status: 200,
        body: {
          group_by: 'platform',
          timeframe: '1y',
          labels,
          points: points.map((p) => ({ t: p.t.toISOString(), weights_pct: labels.map((l) => p.w.get(l) ?? 0) })),
        },
      }
    },
  },
  {
    method: 'GET',
    pattern: /^\/v1\/vaults\/([^/]+)\/performance\/series$/,
    handle: async (req, q, m) => {
      const timeframe = (req.search.get('timeframe') ?? '30d') as Timeframe
      const now = new Date()
      const w = seriesWindow(timeframe, now)
      const rows = await q(PERFORMANCE_SERIES, [
        decodeURIComponent(m[1]!),
        w.firstStart?.toISOString() ?? null,
        `${w.stepMs} milliseconds`,
        w.lastStart.toISOString(),
        BUCKET_ORIGIN.toISOString(),
        now.toISOString(),
      ])
      const points = rows.map((r) => {
        const spike = isSpike(r.prev_price, r.share_price, DEFAULT_SPIKE_PCT)
        const apy = spike || !r.s0_as_of ? null : realizedApyPct({ asOf: r.s0_as_of, sharePrice: r.s0_price }, { asOf: r.as_of, sharePrice: r.share_price })
        return {
          t: r.t.toISOString(),
          share_price: amount(r.share_price),
          tvl: amount(r.tvl),
          tvl_usd: tvlUsd(r.tvl, r.price_usd),
          apy_7d_pct: apy,
          ...(spike ? { flags: ['spike'] } : {}),
        }
      })
      return { status: 200, body: { timeframe, points } }
    },
  },
  {
    method: 'POST',
    pattern: /^\/graphql$/,
    operation: 'BenchPerformanceList',
    handle: async (_req, q) => {
      const rows = await q(PERFORMANCE_LIST, [])
      const point = (t: Date | null, p: string | null) => (t ? { asOf: t, sharePrice: p! } : null)
      const edges = rows.map((r) => {
        const s1 = point(r.as_of, r.p1)
        return {
          node: {
            id: r.id,
            performance: { apy7d: s1 && realizedApyPct(point(r.t7, r.p7), s1), apy30d: s1 && realizedApyPct(point(r.t30, r.p30), s1) },
          },
        }
      })
      return { status: 200, body: { data: { vaults: { edges } } } }
    },
  },
  {
    method: 'POST',
    pattern: /^\/graphql$/,
    operation: 'BenchVault',
    handle: async (req, q) => {
      const { variables } = JSON.parse(req.body) as { variables: { id: string } }
      const [row] = await q(`SELECT ${VAULT_COLUMNS}, s.as_of, c.positions FROM vaults v ${LATEST_COMPOSITION} WHERE v.id = $1`, [variables.id])
      if (!row) return { status: 200, body: { data: { vault: null } } }
      return {
        status: 200,
        body: { data: { vault: { ...graphqlVault(row), composition: row.as_of ? { asOf: row.as_of.toISOString(), positions: row.positions ?? [] } : null } } },
      }
    },
  },
  {
    method: 'GET',
    pattern: /^\/v1\/users\/([^/]+)\/vaults\/([^/]+)\/transactions$/,
    handle: async (req, q, m) => {
      const filter = { address: decodeURIComponent(m[1]!).toLowerCase(), vaultId: decodeURIComponent(m[2]!), type: null }
      const cursor = req.search.get('cursor')
      const after = cursor ? decodeCursor(cursor, filter) : null
      const rows = await q(HISTORY_PAGE, [filter.address, filter.vaultId, after?.timestamp.toISOString() ?? null, after?.id ?? null])
      const page = rows.slice(0, 50)
      const last = page.at(-1)
      return {
        status: 200,
        body: {
          items: page.map((r) => ({
            id: r.id,
            vault_id: r.vault_id,
            type: r.type,
            status: r.status,
            amount: amount(r.amount),
            timestamp: r.timestamp.toISOString(),
            tx_hash: r.tx_hash,
          })),
          next_cursor: rows.length > 50 && last ? encodeCursor(filter, { timestamp: last.timestamp, id: last.id }) : null,
        },
      }
    },
  },
  {
    method: 'POST',
    pattern: /^\/graphql$/,
    operation: 'BenchDashboard',
    handle: async (req, q) => {
      const { variables } = JSON.parse(req.body) as { variables: { address: string } }
      const [row] = await q(DASHBOARD, [variables.address.toLowerCase()])
      const doc = row!.doc as { vaults: Record<string, any>[]; positions: Record<string, any>[] }
      return {
        status: 200,
        body: {
          data: {
            vaults: {
              edges: doc.vaults.map((v) => ({
                node: {
                  id: v.id,
                  name: v.name,
                  chain: v.chain,
                  status: v.status,
                  tvl: amount(v.tvl),
                  sharePrice: amount(v.share_price),
                  composition: v.as_of ? { asOf: iso(v.as_of), positions: v.positions ?? [] } : null,
                },
              })),
            },
            user: {
              positions: (doc.positions ?? []).map((p) => ({
                vaultId: p.vault_id,
                shareBalance: amount(p.share_balance),
                sharePrice: amount(p.share_price),
                positionValueUsd: amount(p.position_value_usd),
                totalDeposits: amount(p.total_deposits),
                allTimeEarned: amount(p.all_time_earned),
                firstDepositAt: iso(p.first_deposit_at),
              })),
            },
          },
        },
      }
    },
  },
  {
    method: 'POST',
    pattern: /^\/internal\/v1\/apiKey\/verify$/,
    handle: async (req, q) => {
      const { apiKey } = JSON.parse(req.body) as { apiKey: string }
      const [k] = await q(KEY_STATE, [createHash('sha256').update(apiKey).digest('hex')])
      const now = Date.now()
      const active = !!k && k.revoked_at === null && k.expires_at.getTime() > now && k.allowlisted
      // The gateway's answer also carries the key's verification budget; a fixed one of the same size here.
      const rateLimit = { limit: 10_000_000, remaining: 9_999_999, resetMs: 59_999 }
      const data = k
        ? {
            active,
            wallet: k.wallet,
            keyId: k.id,
            expiresAtMs: k.expires_at.getTime(),
            expiresInMs: Math.max(0, k.expires_at.getTime() - now),
            reason: active ? null : k.revoked_at ? 'revoked' : !k.allowlisted ? 'not_whitelisted' : 'expired',
            rateLimit,
          }
        : { active: false, wallet: null, keyId: null, expiresAtMs: null, expiresInMs: null, reason: 'unknown', rateLimit }
      return { status: 200, body: { status: 'ok', data, server_time_ms: Date.now() } }
    },
  },
]

/** The operation name of a GraphQL request body, without a full parse. */
export function operationOf(body: string): string | undefined {
  return /"operationName"\s*:\s*"([^"]+)"/.exec(body)?.[1]
}
