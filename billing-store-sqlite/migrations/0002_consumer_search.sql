-- Substring search over consumers without scanning the table: an FTS5 index with the trigram
-- tokenizer (case-insensitive) over the searched columns, kept in sync by triggers. A search
-- term of three or more characters becomes a phrase query on it; shorter terms fall back to LIKE.
CREATE VIRTUAL TABLE consumers_search USING fts5(
    name, email, phone_number, alias, external_id,
    content = 'consumers', content_rowid = 'seq', tokenize = 'trigram'
);
INSERT INTO consumers_search(consumers_search) VALUES ('rebuild');

CREATE TRIGGER consumers_search_insert AFTER INSERT ON consumers BEGIN
    INSERT INTO consumers_search (rowid, name, email, phone_number, alias, external_id)
    VALUES (new.seq, new.name, new.email, new.phone_number, new.alias, new.external_id);
END;
CREATE TRIGGER consumers_search_delete AFTER DELETE ON consumers BEGIN
    INSERT INTO consumers_search (consumers_search, rowid, name, email, phone_number, alias, external_id)
    VALUES ('delete', old.seq, old.name, old.email, old.phone_number, old.alias, old.external_id);
END;
CREATE TRIGGER consumers_search_update AFTER UPDATE OF name, email, phone_number, alias, external_id ON consumers BEGIN
    INSERT INTO consumers_search (consumers_search, rowid, name, email, phone_number, alias, external_id)
    VALUES ('delete', old.seq, old.name, old.email, old.phone_number, old.alias, old.external_id);
    INSERT INTO consumers_search (rowid, name, email, phone_number, alias, external_id)
    VALUES (new.seq, new.name, new.email, new.phone_number, new.alias, new.external_id);
END;

-- The exact-IBAN half of the search.
CREATE INDEX consumers_branch_iban ON consumers(branch_id, iban) WHERE is_deleted = 0;
