#!/usr/bin/env bash
# Packs vaultgate, installs the tarball into an empty folder as a user would, and checks the
# installed command: --help, migrate against a fresh PostgreSQL database (when one is reachable),
# and start on the embedded default, answering a GraphQL query.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
port="${SMOKE_PORT:-4319}"
cleanup() {
  [ -n "${gw_pid:-}" ] && kill "$gw_pid" 2>/dev/null || true
  [ -n "${smoke_db:-}" ] && psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $smoke_db WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

cd "$root"
tarball="$(npm pack --silent --pack-destination "$work" | tail -1)"
echo "smoke: packed $tarball ($(du -h "$work/$tarball" | cut -f1))"
tar -tzf "$work/$tarball" | sed 's|^package/||' | grep -Ev '^(bin/|dist/|prisma/|README.md|LICENSE|package.json|npm-shrinkwrap.json|schema.graphql)' && { echo "smoke: unexpected files in the tarball" >&2; exit 1; }

mkdir -p "$work/app" && cd "$work/app"
npm init -y >/dev/null
npm install --no-audit --no-fund "$work/$tarball" >/dev/null
npx vaultgate --help | grep -q "vaultgate start"
echo "smoke: npx vaultgate --help lists the commands"

# The order exchange imports the verifier as a library, with its type declarations.
cat > check-library.mts <<'TS'
import { connectApiKeyVerifier, createApiKeyVerifier, type VerifyResult } from 'vaultgate'
const result: VerifyResult | undefined = undefined
if (typeof createApiKeyVerifier !== 'function' || typeof connectApiKeyVerifier !== 'function') throw new Error('verifier exports missing')
console.log('library ok', result ?? '')
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

DATA_DIR="$work/app/.data" PORT="$port" LOG_LEVEL=warn npx vaultgate start > "$work/start.log" 2>&1 &
gw_pid=$!
for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.5; done
answer="$(curl -sf "http://127.0.0.1:$port/graphql" -H 'content-type: application/json' -d '{"query":"{ vault(id: \"usdc-prime\") { id } }"}')"
[ "$answer" = '{"data":{"vault":{"id":"usdc-prime"}}}' ] || { echo "smoke: unexpected answer: $answer" >&2; cat "$work/start.log" >&2; exit 1; }
kill -TERM "$gw_pid"; wait "$gw_pid" || true; gw_pid=""
echo "smoke: npx vaultgate start served the demo data"
