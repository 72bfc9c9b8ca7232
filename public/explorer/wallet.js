// The wallet panel's lists: its activity (transactions in one vault or across every vault, paged
// with the API's cursor) and its redeem queue (pending and claimable redeems with their place in
// the queue and ETA, decisions §14). Render functions take GraphQL's answers, as explorer.js reads them.
import { $, amount, el, minute } from './lib.js'

const TX_FIELDS = 'edges { node { id vaultId type status amount timestamp txHash } } pageInfo { hasNextPage endCursor }'
export const PAGE_SIZE = 25

/** The wallet's first page with its position in the shown vault and its redeems; `txVault` null: every vault. */
export const WALLET_QUERY = `query ExplorerWallet($address: String!, $vaultId: ID!, $txVault: ID) {
  user(address: $address) {
    address
    position(vaultId: $vaultId) { shareBalance sharePrice positionValueUsd totalDeposits allTimeEarned firstDepositAt }
    pendingRedeems {
      totalPending totalClaimable averageRedeemDelay
      pendingRedeems { vaultId amount submittedAt status queuePosition amountAhead eta { p50 p90 } txHash }
    }
    transactions(vaultId: $txVault, first: ${PAGE_SIZE}) { ${TX_FIELDS} }
  }
}`

/** The next page of the same list (the cursor is only valid for the same vault filter). */
export const MORE_TRANSACTIONS = `query ExplorerWalletMore($address: String!, $txVault: ID, $after: String!) {
  user(address: $address) { transactions(vaultId: $txVault, first: ${PAGE_SIZE}, after: $after) { ${TX_FIELDS} } }
}`

const utc = (iso) => `${minute(iso)} UTC`
/** A link to the vault (explorer.js shows it in place, keeping the rest of the view; the href serves a new tab). */
const vaultLink = (id, wallet) => el('a', { href: `?vault=${encodeURIComponent(id)}&wallet=${encodeURIComponent(wallet)}`, 'data-vault': id }, id)

/** Transaction rows; `append` adds an older page under the ones shown. */
export function renderTransactions(connection, { wallet, acrossVaults, append = false }) {
  const rows = connection.edges.map(({ node: t }) =>
    el(
      'tr',
      { 'data-tx': t.id },
      el('td', {}, minute(t.timestamp)),
      el('td', {}, vaultLink(t.vaultId, wallet)),
      el('td', {}, t.type),
      el('td', {}, el('span', { class: `badge ${t.status}` }, t.status)),
      el('td', { class: 'num' }, amount(t.amount)),
      el('td', {}, el('code', { title: t.txHash }, `${t.txHash.slice(0, 10)}…`)),
    ),
  )
  if (append) $('transactions').append(...rows)
  else {
    if (!rows.length)
      rows.push(el('tr', {}, el('td', { colSpan: 6, class: 'muted' }, acrossVaults ? 'No transactions in any vault.' : 'No transactions in this vault.')))
    $('transactions').replaceChildren(...rows)
  }
  $('more-transactions').hidden = !connection.pageInfo.hasNextPage
  $('transactions-count').textContent =
    `${$('transactions').querySelectorAll('tr[data-tx]').length} shown${connection.pageInfo.hasNextPage ? ', more older ones' : ''}`
  return connection.pageInfo.endCursor
}

/** The redeem queue: a line with the totals, then one row per redeem that is not paid yet. */
export function renderRedeems(r, wallet) {
  const n = r.pendingRedeems.length
  const delay = r.averageRedeemDelay > 0 ? `; recent redeems in these vaults took ${(r.averageRedeemDelay / 3600).toFixed(1)} h on average` : ''
  $('pending').textContent = n
    ? `${n} redeem${n === 1 ? '' : 's'} not paid yet: ${amount(r.totalPending)} pending, ${amount(r.totalClaimable)} claimable${delay}.`
    : 'No pending or claimable redeems.'
  const eta = (p, key) => {
    if (p.status === 'claimable') return 'ready to claim'
    if (!p.eta) return el('span', { class: 'muted', title: 'No redeem completed in this vault in the last 90 days.' }, 'no recent history')
    return utc(p.eta[key])
  }
  $('redeems').replaceChildren(
    ...r.pendingRedeems.map((p) =>
      el(
        'tr',
        { 'data-redeem': p.txHash, 'data-status': p.status },
        el('td', {}, vaultLink(p.vaultId, wallet)),
        el('td', {}, minute(p.submittedAt)),
        el('td', { class: 'num' }, amount(p.amount)),
        el('td', {}, el('span', { class: `badge ${p.status}` }, p.status)),
        el('td', { class: 'num' }, p.queuePosition === null ? '—' : `#${p.queuePosition}`),
        el('td', { class: 'num' }, p.amountAhead === null ? '—' : amount(p.amountAhead)),
        el('td', {}, eta(p, 'p50')),
        el('td', {}, eta(p, 'p90')),
      ),
    ),
  )
  $('redeem-queue').hidden = n === 0
}
