-- New consumers join the search index when their transaction commits, all of a commit's at once,
-- instead of row by row. An FTS5 table that a transaction has written to flushes its pending
-- index data at every statement savepoint after that, so one consumer insert used to cost one
-- index flush (a new index segment) per consumer, paid inside the write path; now the writer
-- indexes every consumer of a commit with one statement just before COMMIT (see writer.rs), so
-- committed rows are always searchable and a batch pays one flush.
CREATE TABLE consumers_search_pending (seq INTEGER PRIMARY KEY);

DROP TRIGGER consumers_search_insert;
CREATE TRIGGER consumers_search_insert AFTER INSERT ON consumers BEGIN
    INSERT INTO consumers_search_pending (seq) VALUES (new.seq);
END;

-- A row not indexed yet is indexed with its values at commit: its update and delete must not
-- touch the index (an external-content FTS5 'delete' of a row it never held corrupts it).
DROP TRIGGER consumers_search_update;
CREATE TRIGGER consumers_search_update AFTER UPDATE OF name, email, phone_number, alias, external_id ON consumers BEGIN
    INSERT INTO consumers_search (consumers_search, rowid, name, email, phone_number, alias, external_id)
    SELECT 'delete', old.seq, old.name, old.email, old.phone_number, old.alias, old.external_id
    WHERE NOT EXISTS (SELECT 1 FROM consumers_search_pending WHERE seq = old.seq);
    INSERT INTO consumers_search (rowid, name, email, phone_number, alias, external_id)
    SELECT new.seq, new.name, new.email, new.phone_number, new.alias, new.external_id
    WHERE NOT EXISTS (SELECT 1 FROM consumers_search_pending WHERE seq = old.seq);
END;

DROP TRIGGER consumers_search_delete;
CREATE TRIGGER consumers_search_delete AFTER DELETE ON consumers BEGIN
    INSERT INTO consumers_search (consumers_search, rowid, name, email, phone_number, alias, external_id)
    SELECT 'delete', old.seq, old.name, old.email, old.phone_number, old.alias, old.external_id
    WHERE NOT EXISTS (SELECT 1 FROM consumers_search_pending WHERE seq = old.seq);
    DELETE FROM consumers_search_pending WHERE seq = old.seq;
END;
