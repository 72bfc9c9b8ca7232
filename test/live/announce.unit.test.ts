import { describe, expect, it } from 'vitest'
import { ANNOUNCEMENT_BYTES, announcementPayloads, parseAnnouncement } from '../../src/importer/changes.js'

// What a write announces on its NOTIFY (src/importer/changes.ts): ids only, split so that every
// payload stays under PostgreSQL's 8000-byte limit, each one complete on its own.

const address = (n: number) => `0x${n.toString(16).padStart(40, '0')}`

describe('change announcements', () => {
  it('names vaults and transactions by wallet in one payload when they fit', () => {
    const payloads = announcementPayloads({
      vaults: ['v1', 'v2', 'v1'],
      transactions: [
        { id: 't1', address: address(1) },
        { id: 't2', address: address(2) },
        { id: 't3', address: address(1) },
      ],
    })
    expect(payloads).toEqual([`{"v":["v1","v2"],"w":{"${address(1)}":["t1","t3"],"${address(2)}":["t2"]}}`])
    expect(parseAnnouncement(payloads[0]!)).toEqual({
      all: false,
      vaults: ['v1', 'v2'],
      wallets: new Map([
        [address(1), ['t1', 't3']],
        [address(2), ['t2']],
      ]),
    })
  })

  it('splits a large change into payloads under the limit that together name everything once', () => {
    const vaults = Array.from({ length: 300 }, (_, i) => `vault-${'x'.repeat(100)}-${i}`)
    const transactions = Array.from({ length: 5000 }, (_, i) => ({ id: `tx-${'y'.repeat(100)}-${i}`, address: address(i % 37) }))
    const payloads = announcementPayloads({ vaults, transactions })
    expect(payloads.length).toBeGreaterThan(70)
    for (const p of payloads) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(ANNOUNCEMENT_BYTES)
    const parsed = payloads.map(parseAnnouncement)
    expect(parsed.flatMap((p) => p.vaults)).toEqual(vaults)
    const named = parsed.flatMap((p) => [...p.wallets].flatMap(([a, ids]) => ids.map((id) => ({ id, address: a }))))
    expect(named.sort((x, y) => x.id.localeCompare(y.id))).toEqual([...transactions].sort((x, y) => x.id.localeCompare(y.id)))
  })

  it('reads an empty or unreadable payload (a NOTIFY sent by hand) as "something changed"', () => {
    expect(parseAnnouncement('')).toEqual({ all: true, vaults: [], wallets: new Map() })
    expect(parseAnnouncement('not json')).toEqual({ all: true, vaults: [], wallets: new Map() })
    expect(announcementPayloads({ vaults: [], transactions: [] })).toEqual([])
  })
})
