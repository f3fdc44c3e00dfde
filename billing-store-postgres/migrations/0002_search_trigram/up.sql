-- Substring search without scanning: trigram (pg_trgm) GIN indexes for the `search_term` of the
-- consumer, product and coupon lists.
--
-- The store searches with `lower((col COLLATE c)) LIKE lower((pattern COLLATE c))`, which is
-- exactly what `(col COLLATE c) ILIKE pattern` computes (PostgreSQL lowers both sides under the
-- collation and compares them), where `c` is ICU's root collation "und-x-icu" when the server
-- has it (Unicode case folding) and else "default" (see src/lists.rs). Each index is on that
-- same expression, so the planner matches it and pg_trgm answers the LIKE from the trigrams of
-- the pattern: a BitmapOr over one index per searched column (and a btree for the exact IBAN).
--
-- pg_trgm ships with PostgreSQL (contrib) and is a trusted extension: the database's owner may
-- create it. Where it is missing or may not be created, this migration still succeeds, with a
-- warning, and searches stay correct but scan the branch's rows.
--
-- GIN's pending list is kept small (64 kB): inserts stay cheap (they append to the list) while
-- a search, which reads the whole list, never has much to read and the planner's cost of the
-- indexes stays low.

-- The exact-IBAN arm of the consumer search (all arms of an OR need an index for a BitmapOr).
CREATE INDEX consumers_branch_iban ON consumers(branch_id, iban) WHERE NOT is_deleted AND iban IS NOT NULL;

DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'pg_trgm is not available (%): substring search will scan instead of using trigram indexes', SQLERRM;
END
$$;

DO $$
DECLARE
    ops text;
    coll text;
    target record;
BEGIN
    SELECT format('%I.gin_trgm_ops', n.nspname) INTO ops
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
    WHERE e.extname = 'pg_trgm';
    IF ops IS NULL THEN
        RETURN;
    END IF;
    -- The collation the store folds case with: keep in step with search_collation() in src/lib.rs.
    IF EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu') THEN
        coll := 'und-x-icu';
    ELSE
        coll := 'default';
    END IF;
    FOR target IN
        SELECT * FROM (VALUES
            ('consumers_search_name', 'consumers', 'name'),
            ('consumers_search_email', 'consumers', 'email'),
            ('consumers_search_phone', 'consumers', 'phone_number'),
            ('consumers_search_alias', 'consumers', 'alias'),
            ('consumers_search_external_id', 'consumers', 'external_id'),
            ('products_search_name', 'products', 'name'),
            ('products_search_description', 'products', 'description'),
            ('coupons_search_name', 'coupons', 'name')
        ) AS t(index_name, table_name, column_name)
    LOOP
        EXECUTE format(
            'CREATE INDEX %I ON %I USING gin (lower(%I COLLATE %I) %s) WITH (gin_pending_list_limit = 64) WHERE NOT is_deleted',
            target.index_name, target.table_name, target.column_name, coll, ops
        );
    END LOOP;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'trigram search indexes not created (%): substring search will scan', SQLERRM;
END
$$;
