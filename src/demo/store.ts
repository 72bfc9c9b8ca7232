import { prisma, type Db } from '../db/client.js'

// The demo's reads: whether a database holds data at all, and the hints a later start prints.

export async function hasVaults(db: Db = prisma): Promise<boolean> {
  return (await db.vault.findFirst({ select: { id: true } })) !== null
}

/** A few vault ids, the wallet with pending redeems in the most vaults, and the most active depositor. */
export async function readHintRows(db: Db = prisma) {
  const vaults = await db.vault.findMany({ select: { id: true }, orderBy: { id: 'asc' }, take: 8 })
  const pending = await db.$queryRaw<{ address: string; vault_id: string; vaults: number }[]>`
    SELECT address, min(vault_id) AS vault_id, count(DISTINCT vault_id)::int AS vaults FROM transactions
    WHERE type = 'redeem' AND status = 'pending' GROUP BY address ORDER BY 3 DESC, address LIMIT 1`
  const active = await db.$queryRaw<{ address: string; vault_id: string; n: number }[]>`
    SELECT address, vault_id, count(*)::int AS n FROM transactions
    WHERE type = 'deposit' AND status = 'completed' GROUP BY address, vault_id ORDER BY 3 DESC, address LIMIT 1`
  return { vaultIds: vaults.map((v) => v.id), pending, active }
}
