-- DropIndex
DROP INDEX "transactions_completed_redeems_idx";

-- CreateIndex
CREATE INDEX "transactions_completed_redeems_idx" ON "transactions"("vault_id", "completed_at", "timestamp") WHERE (type = 'redeem' AND status = 'completed');
