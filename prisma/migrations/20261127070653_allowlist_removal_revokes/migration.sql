-- A wallet removed from the allowlist loses its key however it is removed: through the admin API
-- (src/keys/allowlist.ts revokes first, as the admin, and this then finds nothing left to do) or
-- by SQL run against the table directly (DELETE, TRUNCATE). Its unrevoked key is revoked
-- (allowlist_removed, or expired when it already was), the revocation is recorded in the audit
-- trail (actor system), and the verifiers of every gateway are told on the key channel of
-- src/keys/changes.ts (origin database, so every process drops its cached state). Adding the
-- address back revives nothing: revoked keys stay revoked.

CREATE FUNCTION vaultgate_revoke_unlisted_keys(wallets text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  wallet text;
BEGIN
  -- The wallet lock that key writes take (inWalletTransaction in src/keys/store.ts, class vgk1), in
  -- one order: a key created concurrently is either seen here and revoked, or refused after the removal.
  PERFORM pg_advisory_xact_lock(1986489137, hashtext(w)) FROM unnest(wallets) AS w ORDER BY w;
  WITH revoked AS (
    UPDATE api_keys k
    SET revoked_at = now(),
        revoke_reason = (CASE WHEN k.expires_at <= now() THEN 'expired' ELSE 'allowlist_removed' END)::"KeyRevokeReason"
    WHERE k.wallet = ANY (wallets) AND k.revoked_at IS NULL
      AND NOT EXISTS (SELECT 1 FROM allowlist a WHERE a.address = k.wallet)
    RETURNING k.id, k.wallet, k.revoked_at, k.revoke_reason
  )
  INSERT INTO key_events (at, wallet, key_id, action, reason, actor)
  SELECT revoked_at, revoked.wallet, id, 'revoked'::"KeyEventAction", revoke_reason, 'system' FROM revoked;
  FOREACH wallet IN ARRAY wallets LOOP
    PERFORM pg_notify('vaultgate_api_keys', wallet || ' database');
  END LOOP;
END $$;

CREATE FUNCTION vaultgate_allowlist_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM vaultgate_revoke_unlisted_keys(ARRAY(SELECT DISTINCT address FROM gone));
  RETURN NULL;
END $$;

CREATE TRIGGER allowlist_deleted AFTER DELETE ON allowlist
  REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION vaultgate_allowlist_deleted();

-- TRUNCATE fires no row or transition-table trigger: every wallet that holds an unrevoked key.
CREATE FUNCTION vaultgate_allowlist_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM vaultgate_revoke_unlisted_keys(ARRAY(SELECT DISTINCT wallet FROM api_keys WHERE revoked_at IS NULL));
  RETURN NULL;
END $$;

CREATE TRIGGER allowlist_truncated AFTER TRUNCATE ON allowlist
  FOR EACH STATEMENT EXECUTE FUNCTION vaultgate_allowlist_truncated();
