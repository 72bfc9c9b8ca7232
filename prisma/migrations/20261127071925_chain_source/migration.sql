-- CreateTable
CREATE TABLE "source_cursors" (
    "vault_id" TEXT NOT NULL,
    "chain_id" INTEGER NOT NULL,
    "address" TEXT NOT NULL,
    "block_number" BIGINT NOT NULL,
    "block_hash" TEXT,
    "block_timestamp" BIGINT,
    "progress" JSONB NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "source_cursors_pkey" PRIMARY KEY ("vault_id")
);

-- CreateTable
CREATE TABLE "source_journal" (
    "vault_id" TEXT NOT NULL,
    "from_block" BIGINT NOT NULL,
    "to_block" BIGINT NOT NULL,
    "to_hash" TEXT NOT NULL,
    "previous_block_number" BIGINT NOT NULL,
    "previous_block_hash" TEXT,
    "previous_block_timestamp" BIGINT,
    "previous_progress" JSONB NOT NULL,
    "inserted_transactions" TEXT[],
    "completed_transactions" TEXT[],
    "snapshot_times" TIMESTAMPTZ(3)[],
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "source_journal_pkey" PRIMARY KEY ("vault_id","to_block")
);

-- CreateTable
CREATE TABLE "source_chains" (
    "chain" TEXT NOT NULL,
    "chain_id" INTEGER NOT NULL,
    "head_block" BIGINT,
    "last_success_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "last_error_at" TIMESTAMPTZ(3),

    CONSTRAINT "source_chains_pkey" PRIMARY KEY ("chain")
);
