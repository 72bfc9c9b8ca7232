// How old the data is (decisions §10, GET /v1/status), shown in the page header.
import { $, el, minute, rest } from './lib.js'

export const fetchStatus = () => rest('/status')

/** `status` is the body of GET /v1/status: {data_as_of, last_import_at, sources, stale}. */
export function renderFreshness(status) {
  const box = $('freshness')
  const asOf = status.data_as_of ? `data as of ${minute(status.data_as_of)} UTC` : 'no data yet'
  const sources = (status.sources ?? []).map((s) => `${s.name}${s.last_error ? ` (error: ${s.last_error})` : ''}`)
  box.title = [
    `Newest snapshot or transaction: ${status.data_as_of ?? 'none'}`,
    `Last import: ${status.last_import_at ?? 'none'}`,
    sources.length ? `Sources: ${sources.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('\n')
  box.replaceChildren(
    el('span', { class: 'as-of' }, asOf),
    ...(status.stale ? [el('span', { class: 'badge stale', title: 'Older than the gateway’s STALE_AFTER_MS: the figures may be out of date.' }, 'stale')] : []),
  )
  box.dataset.stale = String(status.stale)
  box.hidden = false
}
