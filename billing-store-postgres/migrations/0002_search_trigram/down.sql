-- The extension is left in place: other schemas may use it.
DROP INDEX IF EXISTS coupons_search_name;
DROP INDEX IF EXISTS products_search_description;
DROP INDEX IF EXISTS products_search_name;
DROP INDEX IF EXISTS consumers_search_external_id;
DROP INDEX IF EXISTS consumers_search_alias;
DROP INDEX IF EXISTS consumers_search_phone;
DROP INDEX IF EXISTS consumers_search_email;
DROP INDEX IF EXISTS consumers_search_name;
DROP INDEX consumers_branch_iban;
