-- CreateTable
CREATE TABLE "data_state" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "data_as_of" TIMESTAMPTZ(3),
    "last_import_at" TIMESTAMPTZ(3),

    CONSTRAINT "data_state_pkey" PRIMARY KEY ("id")
);

-- Existing data keeps its freshness: the newest time it holds (capped at now: a row dated in the
-- future is not data of the future). The last import time is unknown until the next import.
INSERT INTO "data_state" ("id", "data_as_of")
SELECT 1, CASE WHEN newest IS NULL THEN NULL ELSE LEAST(newest, now()) END
FROM (SELECT GREATEST(
  (SELECT max("as_of") FROM "vault_snapshots"),
  (SELECT max("as_of") FROM "composition_snapshots"),
  (SELECT max("timestamp") FROM "transactions"),
  (SELECT max("completed_at") FROM "transactions")) AS newest) AS n;
