# syntax=docker/dockerfile:1
# vaultgate: the compiled gateway on Node 24, as a non-root user with production dependencies only.
#   docker build -t vaultgate .
#   docker run -p 4000:4000 -v vaultgate-data:/data vaultgate              # embedded database, demo data
#   docker run -p 4000:4000 -e DATABASE_URL=postgresql://… vaultgate       # PostgreSQL
# compose.yaml runs it with PostgreSQL, Redis and two replicas (docs/operations.md "Deploy"). The image's
# command is the one scripts/smoke-package.sh runs on the packed package (test/deploy.unit.test.ts).

# Build with the dev dependencies, then pack exactly what `npm pack` ships (package.json "files").
FROM node:24-slim AS build
WORKDIR /src
COPY package.json npm-shrinkwrap.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY . .
RUN npm pack --silent --pack-destination /tmp \
 && mkdir /app && tar -xzf /tmp/vaultgate-*.tgz --strip-components=1 -C /app

# The package's production dependencies, from its own npm-shrinkwrap.json; no install scripts
# (nothing at runtime needs one: the Prisma client and the migration engine are WebAssembly).
FROM node:24-slim AS deps
WORKDIR /app
COPY --from=build /app ./
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts && npm cache clean --force

FROM node:24-slim
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
