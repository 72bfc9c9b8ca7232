-- AlterTable
ALTER TABLE "source_chains" ADD COLUMN     "status" TEXT NOT NULL DEFAULT 'ok';

-- CreateTable
CREATE TABLE "transaction_event_generations" (
    "transaction_id" TEXT NOT NULL,
    "generation" INTEGER NOT NULL,

    CONSTRAINT "transaction_event_generations_pkey" PRIMARY KEY ("transaction_id")
);
