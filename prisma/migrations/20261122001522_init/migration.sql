-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "VaultStatus" AS ENUM ('active', 'paused', 'closed');

-- CreateEnum
CREATE TYPE "TransactionType" AS ENUM ('deposit', 'withdraw', 'redeem');

-- CreateEnum
CREATE TYPE "TransactionStatus" AS ENUM ('pending', 'completed', 'failed', 'cancelled');

-- CreateEnum
CREATE TYPE "KeyEventAction" AS ENUM ('created', 'revoked');

-- CreateEnum
CREATE TYPE "KeyRevokeReason" AS ENUM ('user', 'replaced', 'expired', 'allowlist_removed');

-- CreateTable
CREATE TABLE "vaults" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "chain" TEXT NOT NULL,
    "chain_id" TEXT,
    "symbol" TEXT NOT NULL,
    "base_asset" TEXT NOT NULL,
    "base_asset_price_usd" DECIMAL(78,18) NOT NULL,
    "status" "VaultStatus" NOT NULL,
    "tvl" DECIMAL(78,18) NOT NULL,
    "share_price" DECIMAL(78,18) NOT NULL,
    "perf_fee_bps" INTEGER NOT NULL,
    "mgmt_fee_bps" INTEGER,
    "contract_address" TEXT NOT NULL,
    "max_deposit" DECIMAL(78,18),
    "min_deposit" DECIMAL(78,18),
    "deposit_paused" BOOLEAN,
    "instant_liquidity" BOOLEAN,
    "instant_slippage_max_bps" INTEGER,
    "redeem_24h_threshold_pct_of_aum" DOUBLE PRECISION,
    "redeem_48h_above_threshold" BOOLEAN,
    "icon_dark" TEXT,
    "icon_light" TEXT,
    "api_endpoint" TEXT NOT NULL,
    "description" TEXT,
    "docs_url" TEXT,
    "inception_date" DATE,
    "strategy_brief" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "vaults_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "composition_snapshots" (
    "id" BIGSERIAL NOT NULL,
    "vault_id" TEXT NOT NULL,
    "as_of" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "composition_snapshots_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "allocations" (
    "snapshot_id" BIGINT NOT NULL,
    "platform" TEXT NOT NULL,
    "asset" TEXT NOT NULL,
    "symbol" TEXT NOT NULL,
    "pct" DOUBLE PRECISION NOT NULL,
    "apy_est_pct" DOUBLE PRECISION NOT NULL,
    "icon" TEXT NOT NULL,

    CONSTRAINT "allocations_pkey" PRIMARY KEY ("snapshot_id","platform","asset")
);

-- CreateTable
CREATE TABLE "transactions" (
    "id" TEXT NOT NULL,
    "vault_id" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "type" "TransactionType" NOT NULL,
    "status" "TransactionStatus" NOT NULL,
    "amount" DECIMAL(78,18) NOT NULL,
    "shares" DECIMAL(78,18) NOT NULL,
    "timestamp" TIMESTAMPTZ(3) NOT NULL,
    "completed_at" TIMESTAMPTZ(3),
    "tx_hash" TEXT NOT NULL,

    CONSTRAINT "transactions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "wallet" TEXT NOT NULL,
    "key_prefix" TEXT NOT NULL,
    "digest" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),
    "revoke_reason" "KeyRevokeReason",

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "allowlist" (
    "address" TEXT NOT NULL,
    "note" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "allowlist_pkey" PRIMARY KEY ("address")
);

-- CreateTable
CREATE TABLE "key_events" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "wallet" TEXT NOT NULL,
    "key_id" UUID NOT NULL,
    "action" "KeyEventAction" NOT NULL,
    "reason" "KeyRevokeReason",
    "actor" TEXT NOT NULL,

    CONSTRAINT "key_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "vaults_chain_status_id_idx" ON "vaults"("chain", "status", "id");

-- CreateIndex
CREATE INDEX "vaults_status_id_idx" ON "vaults"("status", "id");

-- CreateIndex
CREATE UNIQUE INDEX "composition_snapshots_vault_id_as_of_key" ON "composition_snapshots"("vault_id", "as_of" DESC);

-- CreateIndex
CREATE INDEX "transactions_history_idx" ON "transactions"("address", "vault_id", "timestamp" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "transactions_history_type_idx" ON "transactions"("address", "vault_id", "type", "timestamp" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "transactions_pending_redeems_idx" ON "transactions"("address", "timestamp") WHERE (type = 'redeem' AND status = 'pending');

-- CreateIndex
CREATE INDEX "transactions_completed_redeems_idx" ON "transactions"("vault_id", "completed_at") WHERE (type = 'redeem' AND status = 'completed');

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_digest_key" ON "api_keys"("digest");

-- CreateIndex
CREATE INDEX "api_keys_wallet_created_at_idx" ON "api_keys"("wallet", "created_at" DESC);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_one_active_per_wallet" ON "api_keys"("wallet") WHERE (revoked_at IS NULL);

-- CreateIndex
CREATE INDEX "key_events_wallet_at_idx" ON "key_events"("wallet", "at");

-- AddForeignKey
ALTER TABLE "composition_snapshots" ADD CONSTRAINT "composition_snapshots_vault_id_fkey" FOREIGN KEY ("vault_id") REFERENCES "vaults"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "allocations" ADD CONSTRAINT "allocations_snapshot_id_fkey" FOREIGN KEY ("snapshot_id") REFERENCES "composition_snapshots"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "transactions" ADD CONSTRAINT "transactions_vault_id_fkey" FOREIGN KEY ("vault_id") REFERENCES "vaults"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "key_events" ADD CONSTRAINT "key_events_key_id_fkey" FOREIGN KEY ("key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;
