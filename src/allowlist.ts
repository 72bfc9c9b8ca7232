import { prisma } from './db.js'

/** Adds the addresses of the ALLOWLIST setting (already validated and lowercased); existing entries stay. */
export async function upsertAllowlist(addresses: string[]): Promise<number> {
  if (addresses.length === 0) return 0
  const { count } = await prisma.allowlistEntry.createMany({
    data: addresses.map((address) => ({ address, note: 'ALLOWLIST' })),
    skipDuplicates: true,
  })
  return count
}
