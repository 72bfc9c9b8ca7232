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
        body: { group_by: 'platform', timeframe: '1y', labels, points: points.map((p) => ({ t: p.t.toISOString(), weights_pct: labels.map((l) => p.w.get(l) ?? 0) })) },
      }
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
]

/** The operation name of a GraphQL request body, without a full parse. */
export function operationOf(body: string): string | undefined {
  return /"operationName"\s*:\s*"([^"]+)"/.exec(body)?.[1]
}
