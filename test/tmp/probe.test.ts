import { it } from 'vitest'
import { prisma } from '../../src/db/client.js'
import { createTestApp } from '../support/app.js'
import { recordSql } from '../support/sql.js'
it('probe', async () => {
  const t = await createTestApp()
  const r = await recordSql(() => prisma.vault.findFirst({ where: { chainId: '1', contractAddress: { equals: '0xAbC_', mode: 'insensitive' } } }))
  console.log(r.statements)
  const p = await recordSql(() => prisma.vault.findFirst({ where: { chainId: '1', contractAddress: { equals: '0xAbC_', mode: 'insensitive' } } }))
  await t.close()
})
