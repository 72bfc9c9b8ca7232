-- AlterTable
ALTER TABLE "webhook_endpoints" ADD COLUMN     "backoff_until" TIMESTAMPTZ(3),
ADD COLUMN     "failure_streak" INTEGER NOT NULL DEFAULT 0;
