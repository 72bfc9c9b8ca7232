-- DropIndex
DROP INDEX "transactions_pending_redeems_idx";

-- CreateIndex
CREATE INDEX "transactions_wallet_history_idx" ON "transactions"("address", "timestamp" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "transactions_wallet_history_type_idx" ON "transactions"("address", "type", "timestamp" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "transactions_pending_redeems_idx" ON "transactions"("address", "timestamp") WHERE (type = 'redeem' AND (status = 'pending' OR status = 'claimable'));

-- CreateIndex
CREATE INDEX "transactions_redeem_queue_idx" ON "transactions"("vault_id", "timestamp", "id", "amount") WHERE (type = 'redeem' AND status = 'pending');
