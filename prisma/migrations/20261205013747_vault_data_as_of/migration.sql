-- AlterTable
ALTER TABLE "vaults" ADD COLUMN     "data_as_of" TIMESTAMPTZ(3);

-- Existing data keeps its freshness, vault by vault: the newest time each vault holds, never later
-- than the gateway's data_as_of (which is capped at its imports' times, as the importer caps each
-- vault's). Without a data_state time there is no data time to give.
UPDATE "vaults" v SET "data_as_of" = LEAST(n.newest, d."data_as_of")
FROM "data_state" d, (SELECT w."id", GREATEST(
    (SELECT max(s."as_of") FROM "vault_snapshots" s WHERE s."vault_id" = w."id"),
    (SELECT max(c."as_of") FROM "composition_snapshots" c WHERE c."vault_id" = w."id"),
    (SELECT max(GREATEST(t."timestamp", t."completed_at")) FROM "transactions" t WHERE t."vault_id" = w."id")) AS newest
  FROM "vaults" w) n
WHERE d."id" = 1 AND n."id" = v."id" AND n.newest IS NOT NULL AND d."data_as_of" IS NOT NULL;
