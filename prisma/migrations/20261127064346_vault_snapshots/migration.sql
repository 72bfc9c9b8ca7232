-- AlterTable
ALTER TABLE "vaults" ALTER COLUMN "base_asset_price_usd" DROP NOT NULL;

-- CreateTable
CREATE TABLE "vault_snapshots" (
    "vault_id" TEXT NOT NULL,
    "as_of" TIMESTAMPTZ(3) NOT NULL,
    "share_price" DECIMAL(78,18) NOT NULL,
    "tvl" DECIMAL(78,18) NOT NULL,
    "base_asset_price_usd" DECIMAL(78,18),

    CONSTRAINT "vault_snapshots_pkey" PRIMARY KEY ("vault_id","as_of")
);

-- AddForeignKey
ALTER TABLE "vault_snapshots" ADD CONSTRAINT "vault_snapshots_vault_id_fkey" FOREIGN KEY ("vault_id") REFERENCES "vaults"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Backfill (decisions §9: live values and history never disagree): every existing vault gets one
-- snapshot of its live values, dated when they were last written (updated_at).
INSERT INTO "vault_snapshots" ("vault_id", "as_of", "share_price", "tvl", "base_asset_price_usd")
SELECT "id", "updated_at", "share_price", "tvl", "base_asset_price_usd" FROM "vaults";
