// vaultgate explorer, live updates: the page follows the shown vault and the looked-up wallet over
// GraphQL subscriptions (Server-Sent Events on /graphql, docs/push.md) and, on each
// event, reads the vault (values, composition and the performance charts) or the wallet again with
// the page's own functions from explorer.js, so what is shown stays one code path. Kept apart
// from explorer.js: it only watches which vault and wallet the page shows (body data-vault,
// data-wallet) and needs nothing else of it.
import { run, showVaultAndHistory, showWallet } from './explorer.js'

const LIVE_VAULT = 'subscription ExplorerLiveVault($id: ID!) { vaultUpdated(id: $id) { id } }'
const LIVE_WALLET = 'subscription ExplorerLiveWallet($address: String!) { walletActivity(address: $address) { id } }'

/**
 * Follows one subscription: calls `onEvent` for each `next` event, reconnects after a failure or
 * an end (a restarting gateway ends its streams), and stops when the returned function is called.
 */
function follow(query, variables, onEvent, onState) {
  let stopped = false
  let controller
  let retryMs = 1000
  const connect = async () => {
    controller = new AbortController()
    try {
      const res = await fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ query, variables }),
        signal: controller.signal,
      })
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`)
      onState(true)
      retryMs = 1000
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
      let text = ''
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        text += value
        let cut
        while ((cut = text.indexOf('\n\n')) >= 0) {
          const block = text.slice(0, cut)
          text = text.slice(cut + 2)
          // Comments (":") are the heartbeat; `complete` ends the stream (then: reconnect).
          if (/^event: next$/m.test(block)) onEvent()
        }
      }
    } catch {
      // Aborted, refused or cut: retried below unless stopped.
    }
    onState(false)
    if (stopped) return
    setTimeout(() => stopped || connect(), retryMs)
    retryMs = Math.min(retryMs * 2, 30_000)
  }
  connect()
  return () => {
    stopped = true
    controller?.abort()
  }
}

/** One followed subscription per kind, switched when the page shows another vault or wallet. */
function follower(kind, query, variablesOf, refresh) {
  let key = null
  let stop = () => {}
  return (value) => {
    if (value === key) return
    key = value
    stop()
    stop = () => {}
    delete document.body.dataset[`live${kind}`]
    if (!value) return
    stop = follow(
      query,
      variablesOf(value),
      // Read again, as the page would on a click: the answer renders only if still current.
      () => run(refresh),
      (on) => {
        if (key !== value) return
        if (on) document.body.dataset[`live${kind}`] = value
        else delete document.body.dataset[`live${kind}`]
      },
    )
  }
}

const followVault = follower(
  'Vault',
  LIVE_VAULT,
  (id) => ({ id }),
  () => showVaultAndHistory(),
)
const followWallet = follower(
  'Wallet',
  LIVE_WALLET,
  (address) => ({ address }),
  () => showWallet(),
)

const sync = () => {
  followVault(document.body.dataset.vault ?? null)
  followWallet(document.body.dataset.wallet ?? null)
}
new MutationObserver(sync).observe(document.body, { attributes: true, attributeFilter: ['data-vault', 'data-wallet'] })
sync()
