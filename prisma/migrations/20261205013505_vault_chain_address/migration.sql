-- A vault by its chain and contract (decisions §14): one probe of this index, which also makes
-- (chain_id, lower(contract_address)) unique among vaults that have a chain_id. An expression
-- index, which prisma/schema.prisma cannot express (Prisma's diff leaves it alone).
CREATE UNIQUE INDEX "vaults_chain_id_contract_address_key" ON "vaults" ("chain_id", lower("contract_address")) WHERE "chain_id" IS NOT NULL;
