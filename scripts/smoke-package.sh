#!/usr/bin/env bash
# Packs vaultgate, installs the tarball into an empty folder as a user would, and checks the
# installed command: --help, migrate against a fresh PostgreSQL database (when one is reachable);
# then lays the tarball out as the container image does (production dependencies only) and runs
# the image's command: start on the embedded default, answering a GraphQL query.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
port="${SMOKE_PORT:-0}" # 0: a free port, read back from the start output
cleanup() {
  [ -n "${gw_pid:-}" ] && kill "$gw_pid" 2>/dev/null || true
  [ -n "${smoke_db:-}" ] && psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $smoke_db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

cd "$root"
tarball="$(npm pack --silent --pack-destination "$work" | tail -1)"
echo "smoke: packed $tarball ($(du -h "$work/$tarball" | cut -f1))"
tar -tzf "$work/$tarball" | sed 's|^package/||' | grep -Ev '^(bin/|dist/|public/(docs|explorer)/[a-z-]+\.(html|js|css)$|prisma/|README.md|LICENSE|package.json|npm-shrinkwrap.json|schema.graphql)' && { echo "smoke: unexpected files in the tarball" >&2; exit 1; }

mkdir -p "$work/app" && cd "$work/app"
npm init -y >/dev/null
npm install --no-audit --no-fund "$work/$tarball" >/dev/null
npx vaultgate --help | grep -q "vaultgate start"
echo "smoke: npx vaultgate --help lists the commands"

# The order exchange imports the verifier as a library, with its type declarations.
cat > check-library.mts <<'TS'
import { connectApiKeyVerifier, createApiKeyVerifier, type InactiveReason, type RateLimitState, type VerifyOptions, type VerifyResult } from 'vaultgate'
const result: VerifyResult | undefined = undefined
// The verify options and answer fields of docs/spec/decisions.md §13, typed.
const options: VerifyOptions = { clientIp: '203.0.113.7' }
const refused: InactiveReason = 'ip_not_allowed'
const fields = async (v: ReturnType<typeof createApiKeyVerifier>): Promise<[number | null, RateLimitState | null, InactiveReason | null]> => {
  const r = await v.verify('vaultgate_x', options)
  return [r.expiresInMs, r.rateLimit, r.reason]
}
if (typeof createApiKeyVerifier !== 'function' || typeof connectApiKeyVerifier !== 'function') throw new Error('verifier exports missing')
console.log('library ok', result ?? '', refused, typeof fields)
TS
node "$root/node_modules/typescript/bin/tsc" --noEmit --strict --module nodenext --moduleResolution nodenext --target es2023 --skipLibCheck check-library.mts
node -e "import('vaultgate').then((m) => { if (typeof m.createApiKeyVerifier !== 'function') process.exit(1) })"
echo "smoke: import { createApiKeyVerifier } from 'vaultgate' type-checks and loads"

if pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  smoke_db="vaultgate_smoke_$$"
  psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE $smoke_db"
  DATABASE_URL="postgresql://postgres@127.0.0.1:5432/$smoke_db" npx vaultgate migrate | grep -q "Applied"
  DATABASE_URL="postgresql://postgres@127.0.0.1:5432/$smoke_db" npx vaultgate migrate | grep -q "up to date"
  echo "smoke: npx vaultgate migrate applied the migrations to a fresh PostgreSQL database"
fi

# The container image's layout and command (Dockerfile: the packed files with `npm ci --omit=dev
# --omit=optional --ignore-scripts`, then its CMD from that folder; test/deploy.unit.test.ts checks that start_cmd
# is the image's CMD). exec: $! is the gateway itself, so the TERM below reaches it.
start_cmd=(node bin/vaultgate.js start)
mkdir -p "$work/image" && tar -xzf "$work/$tarball" --strip-components=1 -C "$work/image"
(cd "$work/image" && npm ci --omit=dev --omit=optional --no-audit --no-fund --ignore-scripts >/dev/null \
  && find node_modules -name '*.map' -type f -delete)
# The production install holds no build tooling and stays under 300 MiB on disk (issue 30, row 13).
for tool in typescript prisma effect @prisma/studio-core @prisma/dev; do
  [ ! -e "$work/image/node_modules/$tool" ] || { echo "smoke: build tooling in the production install: $tool" >&2; exit 1; }
done
install_mib=$(du -sm "$work/image/node_modules" | cut -f1)
[ "$install_mib" -le 300 ] || { echo "smoke: the production install is $install_mib MiB (at most 300)" >&2; exit 1; }
echo "smoke: production install $install_mib MiB on disk, no build tooling"
(cd "$work/image" && DATA_DIR="$work/image/.data" PORT="$port" LOG_LEVEL=warn exec "${start_cmd[@]}") > "$work/start.log" 2>&1 &
gw_pid=$!
# The URL this gateway printed (never whatever else may listen on a fixed port).
url=""
for _ in $(seq 1 120); do
  url="$(sed -n 's|^vaultgate is ready: \(http://[^ ]*\)/graphql.*|\1|p' "$work/start.log" | head -1)"
  [ -n "$url" ] && break
  kill -0 "$gw_pid" 2>/dev/null || { echo "smoke: vaultgate start exited:" >&2; cat "$work/start.log" >&2; exit 1; }
  sleep 0.5
done
[ -n "$url" ] || { echo "smoke: vaultgate start did not get ready:" >&2; cat "$work/start.log" >&2; exit 1; }
answer="$(curl -sf "$url/graphql" -H 'content-type: application/json' -d '{"query":"{ vault(id: \"usdc-prime\") { id } }"}')"
# Every answer carries its cost (decisions §15: extensions.cost).
[ "$answer" = '{"data":{"vault":{"id":"usdc-prime"}},"extensions":{"cost":{"requested":2,"limit":50000}}}' ] || { echo "smoke: unexpected answer: $answer" >&2; cat "$work/start.log" >&2; exit 1; }
for page in / /docs /explorer/chart.umd.min.js /docs/swagger-ui-bundle.js; do
  curl -sf -H 'Accept: text/html' "$url$page" >/dev/null || { echo "smoke: $page is not served from the installed package" >&2; exit 1; }
done
openapi="$(curl -sf "$url/openapi.json")" # not piped into grep -q: with pipefail, its early exit would fail curl
case "$openapi" in *'"openapi": "3.1'*) ;; *) echo "smoke: /openapi.json is missing" >&2; exit 1 ;; esac
kill -TERM "$gw_pid"; status=0; wait "$gw_pid" || status=$?; gw_pid=""
[ "$status" = 0 ] || { echo "smoke: the gateway exited with $status after SIGTERM" >&2; cat "$work/start.log" >&2; exit 1; }
echo "smoke: the image's command (${start_cmd[*]}, production dependencies only) served the demo data, the explorer, /docs and /openapi.json"
