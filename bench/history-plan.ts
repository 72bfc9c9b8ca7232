// The query plan of one transaction-history page, reduced to what shows whether a page costs the
// same at any depth: which index is walked, whether anything sorts, and how many rows are touched.
import type { Db } from '../src/db/client.js'
import type { HistoryFilter, HistoryPosition } from '../src/wallets/history-cursor.js'
import { Prisma } from '../src/generated/prisma/client.js'
import { historyPageSql } from '../src/wallets/store.js'

interface PlanNode {
  'Node Type': string
  'Index Name'?: string
  'Index Cond'?: string
  Filter?: string
  'Actual Rows'?: number
  'Rows Removed by Filter'?: number
  'Shared Hit Blocks'?: number
  'Shared Read Blocks'?: number
  Plans?: PlanNode[]
}

export interface PagePlan {
  /** Every node type of the plan, depth first ("Limit", "Index Scan", …). */
  nodeTypes: string[]
  /** The index scans: index name, condition, rows returned and rows read then thrown away. */
  indexScans: { index: string; cond: string; rows: number; removedByFilter: number }[]
  /** Buffers (8 kB pages) the whole statement touched. */
  buffers: number
  executionMs: number
}

function walk(node: PlanNode, visit: (n: PlanNode) => void) {
  visit(node)
  for (const child of node.Plans ?? []) walk(child, visit)
}

/** Runs EXPLAIN (ANALYZE, BUFFERS) on exactly the statement the gateway sends for this page. */
export async function explainHistoryPage(db: Db, filter: HistoryFilter, after: HistoryPosition | null, limit: number): Promise<PagePlan> {
  const rows = await db.$queryRaw<{ 'QUERY PLAN': unknown }[]>(Prisma.sql`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${historyPageSql(filter, after, limit + 1)}`)
  const raw = rows[0]!['QUERY PLAN']
  const [top] = (typeof raw === 'string' ? JSON.parse(raw) : raw) as [{ Plan: PlanNode; 'Execution Time': number }]
  const plan: PagePlan = { nodeTypes: [], indexScans: [], buffers: 0, executionMs: top['Execution Time'] }
  walk(top.Plan, (n) => {
    plan.nodeTypes.push(n['Node Type'])
    if (n['Index Name']) {
      plan.indexScans.push({
        index: n['Index Name'],
        cond: n['Index Cond'] ?? '',
        rows: n['Actual Rows'] ?? 0,
        removedByFilter: n['Rows Removed by Filter'] ?? 0,
      })
    }
  })
  plan.buffers = (top.Plan['Shared Hit Blocks'] ?? 0) + (top.Plan['Shared Read Blocks'] ?? 0)
  return plan
}

/** The keyset position `depth` rows into a history (setup for a deep page; not part of a request). */
export async function positionAt(db: Db, filter: HistoryFilter, depth: number): Promise<HistoryPosition> {
  const [row] = await db.$queryRaw<{ timestamp: Date; id: string }[]>`
    SELECT "timestamp", id FROM transactions
    WHERE address = ${filter.address}${filter.vaultId === null ? Prisma.empty : Prisma.sql` AND vault_id = ${filter.vaultId}`}${filter.type === null ? Prisma.empty : Prisma.sql` AND type = ${filter.type}::"TransactionType"`}
    ORDER BY "timestamp" DESC, id DESC OFFSET ${depth}::int LIMIT 1`
  if (!row) throw new Error(`the history has fewer than ${depth + 1} rows`)
  return { timestamp: row.timestamp, id: row.id }
}
