# syntax=docker/dockerfile:1
# vaultgate: the compiled gateway on Node 24, as a non-root user with production dependencies only.
#   docker build -t vaultgate .
#   docker run -p 4000:4000 -v vaultgate-data:/data vaultgate              # embedded database, demo data
#   docker run -p 4000:4000 -e DATABASE_URL=postgresql://… vaultgate       # PostgreSQL
# compose.yaml runs it with PostgreSQL, Redis and two replicas (docs/operations.md "Deploy"). The image's
# command is the one scripts/smoke-package.sh runs on the packed package (test/deploy.unit.test.ts).

# Base images are pinned by digest (node:24-slim, multi-arch index): a rebuild gets the same bytes.
# Refresh deliberately: `docker buildx imagetools inspect node:24-slim` prints the current digest.
# Build with the dev dependencies, then pack exactly what `npm pack` ships (package.json "files").
FROM node:24-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df AS build
WORKDIR /src
COPY package.json npm-shrinkwrap.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY . .
RUN npm pack --silent --pack-destination /tmp \
 && mkdir /app && tar -xzf /tmp/vaultgate-*.tgz --strip-components=1 -C /app

# The package's production dependencies, from its own npm-shrinkwrap.json; no install scripts
# (nothing at runtime needs one: the Prisma client and the migration engine are WebAssembly).
# --omit=optional keeps build tooling out: @prisma/client and viem name `prisma` and `typescript` as
# optional peers, which npm marks devOptional and would otherwise install (~170 MB with
# @prisma/studio-core, @prisma/dev and effect); no optional dependency is needed at runtime
# (pg-cloudflare, type-only packages). scripts/smoke-package.sh checks the size and the absence.
FROM node:24-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df AS deps
WORKDIR /app
COPY --from=build /app ./
# Dependencies' source maps (9k files, 44 MB) go too: nothing at runtime reads them (no
# --enable-source-maps), and the stacks that matter are the gateway's own.
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund --ignore-scripts \
 && find node_modules -name '*.map' -type f -delete && npm cache clean --force

FROM node:24-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4000 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app ./
# The embedded database's directory (used without DATABASE_URL), owned by the unprivileged user.
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 4000
# Ready, not just alive: the database answers, and 503 from SIGTERM on (slim images have no curl).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 4000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "bin/vaultgate.js", "start"]
