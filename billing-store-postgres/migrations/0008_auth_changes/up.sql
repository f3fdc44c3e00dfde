-- Announces every committed change of what authentication reads, so that each process drops
-- the authentications it keeps (billing-store-postgres/src/auth_feed.rs). NOTIFY is delivered
-- at commit and only then; several in one transaction arrive as one.
CREATE FUNCTION billing_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('billing_auth', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER organizations_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON organizations
    FOR EACH STATEMENT EXECUTE FUNCTION billing_auth_changed();
CREATE TRIGGER branches_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON branches
    FOR EACH STATEMENT EXECUTE FUNCTION billing_auth_changed();
CREATE TRIGGER users_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION billing_auth_changed();
CREATE TRIGGER user_branches_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON user_branches
    FOR EACH STATEMENT EXECUTE FUNCTION billing_auth_changed();
CREATE TRIGGER api_keys_auth_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION billing_auth_changed();
