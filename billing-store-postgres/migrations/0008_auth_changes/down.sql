DROP TRIGGER api_keys_auth_changed ON api_keys;
DROP TRIGGER user_branches_auth_changed ON user_branches;
DROP TRIGGER users_auth_changed ON users;
DROP TRIGGER branches_auth_changed ON branches;
DROP TRIGGER organizations_auth_changed ON organizations;
DROP FUNCTION billing_auth_changed();
