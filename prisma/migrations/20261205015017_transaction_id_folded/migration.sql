-- Transaction ids are compared without regard to case (issue 25 row 9): the import refuses an id
-- that differs only in case from a stored one (src/importer/write.ts checkFoldedIds). lower() under
-- the "C" collation folds ASCII letters only, whatever the database's locale (ids are ASCII,
-- src/importer/document.ts). Not UNIQUE: a database may already hold such ids, and a migration
-- must not fail on data; the import's check keeps new ones out.
CREATE INDEX "transactions_id_folded_idx" ON "transactions" (lower("id" COLLATE "C"));
