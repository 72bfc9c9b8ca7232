import type { Db } from '../db/client.js'

// The demo's reads: whether a database holds data at all, and the hints a later start prints.

export async function hasVaults(db: Db): Promise<boolean> {
  return (await db.vault.findFirst({ select: { id: true } })) !== null
}

/**
 * A few vault ids, the wallet with pending redeems in the most vaults (with those vaults), and the
 * open positions (shares deposited minus shares redeemed or withdrawn, pending ones included, above
 * zero) with the most transactions. Every order ends on the key, so the same data gives the same rows.
 */
export async function readHintRows(db: Db) {
  const vaults = await db.vault.findMany({ select: { id: true, chainId: true, contractAddress: true }, orderBy: { id: 'asc' }, take: 8 })
  const pending = await db.$queryRaw<{ address: string; vault_ids: string[] }[]>`
    SELECT address, array_agg(DISTINCT vault_id ORDER BY vault_id) AS vault_ids FROM transactions
    WHERE type = 'redeem' AND status = 'pending' GROUP BY address ORDER BY count(DISTINCT vault_id) DESC, address LIMIT 1`
  const positions = await db.$queryRaw<{ address: string; vault_id: string; n: number }[]>`
    SELECT address, vault_id, count(*)::int AS n FROM transactions GROUP BY address, vault_id
    HAVING sum(CASE WHEN type = 'deposit' AND status = 'completed' THEN shares
                    WHEN type <> 'deposit' AND status IN ('completed', 'pending') THEN -shares ELSE 0 END) > 0
    ORDER BY 3 DESC, address, vault_id LIMIT 20`
  const withChain = vaults.find((v) => v.chainId !== null)
  const contract = withChain && { vaultId: withChain.id, chainId: withChain.chainId!, address: withChain.contractAddress }
  return { vaultIds: vaults.map((v) => v.id), contract, pending, positions }
}
