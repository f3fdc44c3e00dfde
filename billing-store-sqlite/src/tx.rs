//! `billing_core::Tx` on a rusqlite connection.

use crate::rows::*;
use crate::ConstraintNames;
use billing_core::auth::ApiKey;
use billing_core::branch::Branch;
use billing_core::consumer::{CommunicationMethod, Consumer, ConsumerFilter, ConsumerSort, ConsumerType};
use billing_core::coupon::{Coupon, CouponFilter, CouponSort, Discount};
use billing_core::error::StoreError;
use billing_core::event::{EntityType, Event, EventType};
use billing_core::fields::{Email, Iban, Language, PhoneNumber};
use billing_core::ids::*;
use billing_core::list::{Direction, ListQuery, Page};
use billing_core::money::{Currency, Money};
use billing_core::notification::{Channel, Notification};
use billing_core::org::{Invitation, Organization, Role, User};
use billing_core::product::{Product, ProductFilter, ProductPrice, ProductSort, ProductType, RecurringInterval, VatMode};
use billing_core::store::StoreResult;
use rusqlite::types::Value as SqlValue;
use rusqlite::{params_from_iter, Connection, OptionalExtension, Row};
use std::str::FromStr;
use uuid::Uuid;

// Column lists as macros so that whole statements are compile-time constants (`concat!`).
macro_rules! org_cols {
    () => {
        "id, name, name_en, sandbox, settings, clock_offset_us, created_at, clock_advancing_to"
    };
}
macro_rules! user_cols {
    () => {
        "id, org_id, email, first_name, last_name, en_first_name, en_last_name, role, created_at"
    };
}
macro_rules! key_cols {
    () => {
        "id, org_id, user_id, name, key, secret_hash, branch_ids, default_branch_id, is_all_branches, created_at, revoked_at"
    };
}
macro_rules! branch_cols {
    () => {
        "id, org_id, name, created_at, deleted_at, (SELECT COUNT(*) FROM user_branches ub WHERE ub.branch_id = branches.id)"
    };
}
macro_rules! notification_cols {
    () => {
        "id, org_id, branch_id, channel, recipient, template, language, payload, created_at, sent_at"
    };
}
macro_rules! consumer_cols {
    () => {
        "id, org_id, branch_id, name, phone_number, email, external_id, iban, alias, comment, preferred_language, communication_methods, consumer_type, address, vat_number, commercial_registration, external_metadata, is_deleted, created_at, updated_at"
    };
}
macro_rules! product_cols {
    () => {
        "id, org_id, branch_id, name, description, product_type, recurring_interval, recurring_interval_count, is_active, external_metadata, used_in_finalized_invoice, is_deleted, created_at, updated_at"
    };
}
macro_rules! price_cols {
    () => {
        "id, product_id, currency, amount, vat_mode, is_active, created_at, updated_at"
    };
}
macro_rules! coupon_cols {
    () => {
        "id, org_id, branch_id, name, is_percentage, discount_value, currency, is_active, used_in_finalized_invoice, redemptions, is_deleted, created_at, updated_at"
    };
}
macro_rules! event_cols {
    () => {
        "id, org_id, branch_id, event_type, entity_type, entity_id, payload, created_at"
    };
}
macro_rules! product_cols_w {
    () => {
        "id, org_id, branch_id, name, description, product_type, recurring_interval, recurring_interval_count, is_active, external_metadata, sort_price, used_in_finalized_invoice, is_deleted, created_at, updated_at"
    };
}

/// Sort column, direction and page of a list query.
pub(crate) struct Paging<'a> {
    pub order: &'a str,
    pub dir: Direction,
    pub page: u32,
    pub limit: u32,
}

pub struct SqliteTx<'c> {
    conn: &'c Connection,
    names: &'c ConstraintNames,
}

impl<'c> SqliteTx<'c> {
    pub fn new(conn: &'c Connection, names: &'c ConstraintNames) -> Self {
        SqliteTx { conn, names }
    }

    pub(crate) fn err(&self, e: rusqlite::Error) -> StoreError {
        if let rusqlite::Error::SqliteFailure(f, Some(msg)) = &e {
            if f.code == rusqlite::ErrorCode::ConstraintViolation {
                if let Some(cols) = msg.strip_prefix("UNIQUE constraint failed: ") {
                    let name = cols
                        .strip_prefix("index '")
                        .and_then(|n| n.strip_suffix('\''))
                        .map(str::to_string)
                        .or_else(|| self.names.get(cols).cloned())
                        .unwrap_or_else(|| cols.to_string());
                    return StoreError::UniqueViolation(name);
                }
            }
        }
        StoreError::backend_from(e)
    }

    pub(crate) fn exec(&self, sql: &str, params: Vec<SqlValue>) -> StoreResult<usize> {
        let mut st = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        st.execute(params_from_iter(params)).map_err(|e| self.err(e))
    }

    pub(crate) fn one<T>(&self, sql: &str, params: Vec<SqlValue>, map: impl FnOnce(&Row) -> rusqlite::Result<T>) -> StoreResult<Option<T>> {
        let mut st = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        st.query_row(params_from_iter(params), map).optional().map_err(|e| self.err(e))
    }

    pub(crate) fn all<T>(&self, sql: &str, params: Vec<SqlValue>, map: impl FnMut(&Row) -> rusqlite::Result<T>) -> StoreResult<Vec<T>> {
        let mut st = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let rows = st.query_map(params_from_iter(params), map).map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    pub(crate) fn count(&self, sql: &str, params: Vec<SqlValue>) -> StoreResult<u64> {
        Ok(self.one(sql, params, |r| r.get::<_, i64>(0))?.unwrap_or(0) as u64)
    }

    /// Runs a list query: `select` and `from_where` are joined with the ordering and paging.
    pub(crate) fn page<T>(
        &self,
        select: &str,
        from_where: &str,
        params: Vec<SqlValue>,
        paging: Paging<'_>,
        map: impl FnMut(&Row) -> rusqlite::Result<T>,
    ) -> StoreResult<Page<T>> {
        let total = self.count(&format!("SELECT COUNT(*) {from_where}"), params.clone())?;
        let Paging { order, dir, page, limit } = paging;
        let d = dir.sql();
        let sql = format!(
            "{select} {from_where} ORDER BY {order} {d}, id {d} LIMIT {limit} OFFSET {}",
            u64::from(page - 1) * u64::from(limit)
        );
        let items = self.all(&sql, params, map)?;
        Ok(Page { items, total, page, limit })
    }

    fn user_branches(&self, user: UserId) -> StoreResult<Vec<BranchId>> {
        self.all("SELECT branch_id FROM user_branches WHERE user_id = ?1 ORDER BY position", vec![u(user)], |r| {
            id(r, 0)
        })
    }

    fn prices_of(&self, product: ProductId) -> StoreResult<Vec<ProductPrice>> {
        self.all(
            concat!("SELECT ", price_cols!(), " FROM product_prices WHERE product_id = ?1 ORDER BY created_at, id"),
            vec![u(product)],
            price_row,
        )
    }
}

fn org_row(r: &Row) -> rusqlite::Result<Organization> {
    org_row_at(r, 0)
}

fn org_row_at(r: &Row, o: usize) -> rusqlite::Result<Organization> {
    Ok(Organization {
        id: id(r, o)?,
        name: r.get(o + 1)?,
        name_en: r.get(o + 2)?,
        sandbox: r.get(o + 3)?,
        settings: json(r, o + 4)?,
        clock_offset_us: r.get(o + 5)?,
        created_at: ts(r, o + 6)?,
        clock_advancing_to: ts_opt(r, o + 7)?,
    })
}

fn user_row(r: &Row) -> rusqlite::Result<User> {
    Ok(User {
        id: id(r, 0)?,
        org_id: id(r, 1)?,
        email: Email::from_stored(r.get(2)?),
        first_name: r.get(3)?,
        last_name: r.get(4)?,
        en_first_name: r.get(5)?,
        en_last_name: r.get(6)?,
        role: parsed(r, 7, Role::parse)?,
        branch_ids: vec![],
        created_at: ts(r, 8)?,
    })
}

fn key_row(r: &Row) -> rusqlite::Result<ApiKey> {
    key_row_at(r, 0)
}

fn key_row_at(r: &Row, o: usize) -> rusqlite::Result<ApiKey> {
    Ok(ApiKey {
        id: id(r, o)?,
        org_id: id(r, o + 1)?,
        user_id: id(r, o + 2)?,
        name: r.get(o + 3)?,
        key: r.get(o + 4)?,
        secret_hash: r.get(o + 5)?,
        branch_ids: json(r, o + 6)?,
        default_branch_id: id(r, o + 7)?,
        is_all_branches: r.get(o + 8)?,
        created_at: ts(r, o + 9)?,
        revoked_at: ts_opt(r, o + 10)?,
    })
}

fn branch_row(r: &Row) -> rusqlite::Result<Branch> {
    branch_row_at(r, 0)
}

fn branch_row_at(r: &Row, o: usize) -> rusqlite::Result<Branch> {
    Ok(Branch {
        id: id(r, o)?,
        org_id: id(r, o + 1)?,
        name: r.get(o + 2)?,
        created_at: ts(r, o + 3)?,
        deleted_at: ts_opt(r, o + 4)?,
        user_count: r.get::<_, i64>(o + 5)? as u64,
    })
}

fn notification_row(r: &Row) -> rusqlite::Result<Notification> {
    Ok(Notification {
        id: id(r, 0)?,
        org_id: id(r, 1)?,
        branch_id: id_opt(r, 2)?,
        channel: parsed(r, 3, Channel::parse)?,
        recipient: r.get(4)?,
        template: r.get(5)?,
        language: parsed(r, 6, |s| Language::parse(s).ok())?,
        payload: json(r, 7)?,
        created_at: ts(r, 8)?,
        sent_at: ts_opt(r, 9)?,
    })
}

fn consumer_row(r: &Row) -> rusqlite::Result<Consumer> {
    let methods: Vec<String> = json(r, 11)?;
    Ok(Consumer {
        id: id(r, 0)?,
        org_id: id(r, 1)?,
        branch_id: id(r, 2)?,
        name: r.get(3)?,
        phone_number: r.get::<_, Option<String>>(4)?.map(PhoneNumber::from_stored),
        email: r.get::<_, Option<String>>(5)?.map(Email::from_stored),
        external_id: r.get(6)?,
        iban: r.get::<_, Option<String>>(7)?.map(Iban::from_stored),
        alias: r.get(8)?,
        comment: r.get(9)?,
        preferred_language: parsed(r, 10, |s| Language::parse(s).ok())?,
        communication_methods: methods
            .iter()
            .map(|m| CommunicationMethod::parse(m).ok_or_else(|| bad(11, m.clone())))
            .collect::<Result<_, _>>()?,
        consumer_type: parsed(r, 12, ConsumerType::parse)?,
        address: json_opt(r, 13)?,
        vat_number: r.get(14)?,
        commercial_registration: r.get(15)?,
        external_metadata: json(r, 16)?,
        is_deleted: r.get(17)?,
        created_at: ts(r, 18)?,
        updated_at: ts_opt(r, 19)?,
    })
}

fn consumer_params(c: &Consumer) -> Vec<SqlValue> {
    let methods: Vec<&str> = c.communication_methods.iter().map(|m| m.as_str()).collect();
    vec![
        u(c.id),
        u(c.org_id),
        u(c.branch_id),
        s(&c.name),
        s_opt(c.phone_number.as_ref().map(|p| p.as_str())),
        s_opt(c.email.as_ref().map(|e| e.as_str())),
        s_opt(c.email.as_ref().map(|e| e.normalized())),
        s_opt(c.external_id.as_deref()),
        s_opt(c.iban.as_ref().map(|i| i.as_str())),
        s_opt(c.alias.as_deref()),
        s_opt(c.comment.as_deref()),
        s(c.preferred_language.as_str()),
        j(&methods),
        s(c.consumer_type.as_str()),
        c.address.as_ref().map(j).unwrap_or(SqlValue::Null),
        s_opt(c.vat_number.as_deref()),
        s_opt(c.commercial_registration.as_deref()),
        j(&c.external_metadata),
        b(c.is_deleted),
        t(&c.created_at),
        t_opt(&c.updated_at),
    ]
}

fn product_row(r: &Row) -> rusqlite::Result<Product> {
    Ok(Product {
        id: id(r, 0)?,
        org_id: id(r, 1)?,
        branch_id: id(r, 2)?,
        name: r.get(3)?,
        description: r.get(4)?,
        product_type: parsed(r, 5, ProductType::parse)?,
        recurring_interval: r
            .get::<_, Option<String>>(6)?
            .map(|s| RecurringInterval::parse(&s).ok_or_else(|| bad(6, s)))
            .transpose()?,
        recurring_interval_count: r.get::<_, i64>(7)? as u32,
        is_active: r.get(8)?,
        external_metadata: json(r, 9)?,
        prices: vec![],
        used_in_finalized_invoice: r.get(10)?,
        is_deleted: r.get(11)?,
        created_at: ts(r, 12)?,
        updated_at: ts_opt(r, 13)?,
    })
}

fn product_params(p: &Product, default: Currency) -> Vec<SqlValue> {
    let sort_price = p
        .primary_price(default)
        .map(|x| i(x.amount.to_stored().expect("amount in the stored range")))
        .unwrap_or(SqlValue::Null);
    vec![
        u(p.id),
        u(p.org_id),
        u(p.branch_id),
        s(&p.name),
        s_opt(p.description.as_deref()),
        s(p.product_type.as_str()),
        s_opt(p.recurring_interval.map(|x| x.as_str())),
        i(i64::from(p.recurring_interval_count)),
        b(p.is_active),
        j(&p.external_metadata),
        sort_price,
        b(p.used_in_finalized_invoice),
        b(p.is_deleted),
        t(&p.created_at),
        t_opt(&p.updated_at),
    ]
}

fn price_row(r: &Row) -> rusqlite::Result<ProductPrice> {
    let currency = parsed(r, 2, |s| Currency::from_str(s).ok())?;
    let mode = parsed(r, 4, VatMode::parse)?;
    Ok(ProductPrice {
        id: id(r, 0)?,
        product_id: id(r, 1)?,
        amount: Money::from_stored(r.get(3)?, currency),
        vat_mode: mode,
        is_active: r.get(5)?,
        created_at: ts(r, 6)?,
        updated_at: ts_opt(r, 7)?,
    })
}

fn coupon_row(r: &Row) -> rusqlite::Result<Coupon> {
    let currency = r
        .get::<_, Option<String>>(6)?
        .map(|s| Currency::from_str(&s).map_err(|_| bad(6, s)))
        .transpose()?;
    let discount = Discount::from_stored(r.get(4)?, r.get(5)?, currency).ok_or_else(|| bad(6, "fixed coupon without currency".into()))?;
    Ok(Coupon {
        id: id(r, 0)?,
        org_id: id(r, 1)?,
        branch_id: id(r, 2)?,
        name: r.get(3)?,
        discount,
        is_active: r.get(7)?,
        used_in_finalized_invoice: r.get(8)?,
        redemptions: r.get::<_, i64>(9)? as u64,
        is_deleted: r.get(10)?,
        created_at: ts(r, 11)?,
        updated_at: ts_opt(r, 12)?,
    })
}

fn coupon_params(c: &Coupon) -> Vec<SqlValue> {
    vec![
        u(c.id),
        u(c.org_id),
        u(c.branch_id),
        s(&c.name),
        b(c.discount.is_percentage()),
        i(billing_core::money::stored(c.discount.value()).expect("amount in the stored range")),
        s_opt(c.discount.currency().map(|c| c.code())),
        b(c.is_active),
        b(c.used_in_finalized_invoice),
        b(c.is_deleted),
        t(&c.created_at),
        t_opt(&c.updated_at),
    ]
}

fn event_row(r: &Row) -> rusqlite::Result<Event> {
    Ok(Event {
        id: id(r, 0)?,
        org_id: id(r, 1)?,
        branch_id: id(r, 2)?,
        event_type: parsed(r, 3, EventType::parse)?,
        entity_type: parsed(r, 4, EntityType::parse)?,
        entity_id: r.get(5)?,
        payload: json(r, 6)?,
        created_at: ts(r, 7)?,
    })
}

/// Appends `external_metadata.<key> = <value>` conditions (exact match on the JSON value's text).
fn metadata_filter(sql: &mut String, params: &mut Vec<SqlValue>, filters: &[(String, String)]) {
    for (k, v) in filters {
        let path = format!("$.\"{}\"", k.replace('"', "\\\""));
        // Compare with the value's JSON text, as PostgreSQL's `->>` does: json_extract alone
        // would turn `true` into 1.
        let (p, val) = (params.len() + 1, params.len() + 2);
        sql.push_str(&format!(
            " AND (CASE json_type(external_metadata, ?{p}) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN NULL \
             ELSE CAST(json_extract(external_metadata, ?{p}) AS TEXT) END) = ?{val}"
        ));
        params.push(s(path));
        params.push(s(v.as_str()));
    }
}

/// ` AND (contains_folded(col1, ?n) OR …)`: a Unicode case-insensitive substring match.
fn folded_search(sql: &mut String, params: &mut Vec<SqlValue>, columns: &[&str], term: &str, extra: &str) {
    let n = params.len() + 1;
    let ors: Vec<String> = columns.iter().map(|c| format!("contains_folded({c}, ?{n})")).collect();
    sql.push_str(&format!(" AND ({}{extra})", ors.join(" OR ")));
    params.push(s(term.to_lowercase()));
}

impl billing_core::org::OrgTx for SqliteTx<'_> {
    fn insert_org(&mut self, org: &Organization) -> StoreResult<()> {
        self.exec(
            concat!("INSERT INTO organizations (", org_cols!(), ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
            vec![
                u(org.id),
                s(&org.name),
                s_opt(org.name_en.as_deref()),
                b(org.sandbox),
                j(&org.settings),
                i(org.clock_offset_us),
                t(&org.created_at),
                t_opt(&org.clock_advancing_to),
            ],
        )?;
        Ok(())
    }

    fn org(&mut self, org: OrgId) -> StoreResult<Option<Organization>> {
        self.one(concat!("SELECT ", org_cols!(), " FROM organizations WHERE id = ?1"), vec![u(org)], org_row)
    }

    fn update_org(&mut self, org: &Organization) -> StoreResult<()> {
        self.exec(
            "UPDATE organizations SET name = ?2, name_en = ?3, sandbox = ?4, settings = ?5, clock_offset_us = ?6, clock_advancing_to = ?7 WHERE id = ?1",
            vec![
                u(org.id),
                s(&org.name),
                s_opt(org.name_en.as_deref()),
                b(org.sandbox),
                j(&org.settings),
                i(org.clock_offset_us),
                t_opt(&org.clock_advancing_to),
            ],
        )?;
        Ok(())
    }

    fn list_orgs(&mut self) -> StoreResult<Vec<Organization>> {
        self.all(concat!("SELECT ", org_cols!(), " FROM organizations ORDER BY created_at, id"), vec![], org_row)
    }

    fn insert_user(&mut self, user: &User) -> StoreResult<()> {
        self.exec(
            concat!("INSERT INTO users (", user_cols!(), ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
            vec![
                u(user.id),
                u(user.org_id),
                s(user.email.as_str()),
                s(&user.first_name),
                s(&user.last_name),
                s_opt(user.en_first_name.as_deref()),
                s_opt(user.en_last_name.as_deref()),
                s(user.role.as_str()),
                t(&user.created_at),
            ],
        )?;
        for (pos, b) in user.branch_ids.iter().enumerate() {
            self.exec(
                "INSERT INTO user_branches (user_id, branch_id, position) VALUES (?1, ?2, ?3)",
                vec![u(user.id), u(*b), i(pos as i64)],
            )?;
        }
        Ok(())
    }

    fn user(&mut self, org: OrgId, user: UserId) -> StoreResult<Option<User>> {
        let Some(mut found) = self.one(
            concat!("SELECT ", user_cols!(), " FROM users WHERE id = ?1 AND org_id = ?2"),
            vec![u(user), u(org)],
            user_row,
        )?
        else {
            return Ok(None);
        };
        found.branch_ids = self.user_branches(found.id)?;
        Ok(Some(found))
    }

    fn first_org_admin(&mut self, org: OrgId) -> StoreResult<Option<User>> {
        let Some(mut found) = self.one(
            concat!(
                "SELECT ",
                user_cols!(),
                " FROM users WHERE org_id = ?1 AND role = 'organization_admin' ORDER BY created_at, id LIMIT 1"
            ),
            vec![u(org)],
            user_row,
        )?
        else {
            return Ok(None);
        };
        found.branch_ids = self.user_branches(found.id)?;
        Ok(Some(found))
    }

    fn insert_invitation(&mut self, inv: &Invitation) -> StoreResult<()> {
        self.exec(
            "INSERT INTO invitations (id, org_id, email, role, branch_ids, created_by, language, expire_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            vec![
                u(inv.id),
                u(inv.organization_id),
                s(inv.email.as_str()),
                s(inv.role.as_str()),
                j(&inv.branches),
                u(inv.created_by),
                s(inv.language.as_str()),
                t(&inv.expire_at),
                t(&inv.created_at),
            ],
        )?;
        Ok(())
    }
}

impl billing_core::auth::ApiKeyTx for SqliteTx<'_> {
    fn insert_api_key(&mut self, k: &ApiKey) -> StoreResult<()> {
        self.exec(
            concat!("INSERT INTO api_keys (", key_cols!(), ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"),
            vec![
                u(k.id),
                u(k.org_id),
                u(k.user_id),
                s(&k.name),
                s(&k.key),
                s(&k.secret_hash),
                j(&k.branch_ids),
                u(k.default_branch_id),
                b(k.is_all_branches),
                t(&k.created_at),
                t_opt(&k.revoked_at),
            ],
        )?;
        Ok(())
    }

    fn api_key_by_key(&mut self, key: &str) -> StoreResult<Option<ApiKey>> {
        self.one(concat!("SELECT ", key_cols!(), " FROM api_keys WHERE key = ?1"), vec![s(key)], key_row)
    }

    fn api_key_context(&mut self, key: &str, branch: Option<BranchId>) -> StoreResult<Option<(ApiKey, Organization, Option<Branch>)>> {
        // One statement for the key, its organization and the requested (or default) branch:
        // the lookup every API-key request makes.
        self.one(
            concat!(
                "SELECT ",
                "k.id, k.org_id, k.user_id, k.name, k.key, k.secret_hash, k.branch_ids, k.default_branch_id, k.is_all_branches, k.created_at, k.revoked_at, ",
                "o.id, o.name, o.name_en, o.sandbox, o.settings, o.clock_offset_us, o.created_at, o.clock_advancing_to, ",
                "b.id, b.org_id, b.name, b.created_at, b.deleted_at, (SELECT COUNT(*) FROM user_branches ub WHERE ub.branch_id = b.id) ",
                "FROM api_keys k JOIN organizations o ON o.id = k.org_id ",
                "LEFT JOIN branches b ON b.id = COALESCE(?2, k.default_branch_id) AND b.org_id = k.org_id AND b.deleted_at IS NULL ",
                "WHERE k.key = ?1"
            ),
            vec![s(key), branch.map(u).unwrap_or(SqlValue::Null)],
            |r| {
                let b = if r.get::<_, Option<Uuid>>(19)?.is_some() {
                    Some(branch_row_at(r, 19)?)
                } else {
                    None
                };
                Ok((key_row_at(r, 0)?, org_row_at(r, 11)?, b))
            },
        )
    }

    fn count_api_keys_defaulting_to(&mut self, branch: BranchId) -> StoreResult<u64> {
        self.count(
            "SELECT COUNT(*) FROM api_keys WHERE default_branch_id = ?1 AND revoked_at IS NULL",
            vec![u(branch)],
        )
    }
}

impl billing_core::branch::BranchTx for SqliteTx<'_> {
    fn insert_branch(&mut self, br: &Branch) -> StoreResult<()> {
        self.exec(
            "INSERT INTO branches (id, org_id, name, name_key, created_at, deleted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            vec![
                u(br.id),
                u(br.org_id),
                s(&br.name),
                s(Branch::name_key(&br.name)),
                t(&br.created_at),
                t_opt(&br.deleted_at),
            ],
        )?;
        Ok(())
    }

    fn branch(&mut self, org: OrgId, branch: BranchId) -> StoreResult<Option<Branch>> {
        self.one(
            concat!("SELECT ", branch_cols!(), " FROM branches WHERE id = ?1 AND org_id = ?2 AND deleted_at IS NULL"),
            vec![u(branch), u(org)],
            branch_row,
        )
    }

    fn branch_by_name(&mut self, org: OrgId, key: &str) -> StoreResult<Option<Branch>> {
        self.one(
            concat!(
                "SELECT ",
                branch_cols!(),
                " FROM branches WHERE org_id = ?1 AND name_key = ?2 AND deleted_at IS NULL"
            ),
            vec![u(org), s(key)],
            branch_row,
        )
    }

    fn list_branches(&mut self, org: OrgId) -> StoreResult<Vec<Branch>> {
        self.all(
            concat!(
                "SELECT ",
                branch_cols!(),
                " FROM branches WHERE org_id = ?1 AND deleted_at IS NULL ORDER BY created_at, id"
            ),
            vec![u(org)],
            branch_row,
        )
    }

    fn update_branch(&mut self, br: &Branch) -> StoreResult<()> {
        self.exec(
            "UPDATE branches SET name = ?2, name_key = ?3, deleted_at = ?4 WHERE id = ?1",
            vec![u(br.id), s(&br.name), s(Branch::name_key(&br.name)), t_opt(&br.deleted_at)],
        )?;
        Ok(())
    }
}

impl billing_core::notification::NotificationTx for SqliteTx<'_> {
    fn insert_notification(&mut self, n: &Notification) -> StoreResult<()> {
        self.exec(
            concat!(
                "INSERT INTO notifications (",
                notification_cols!(),
                ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
            ),
            vec![
                u(n.id),
                u(n.org_id),
                n.branch_id.map(u).unwrap_or(SqlValue::Null),
                s(n.channel.as_str()),
                s(&n.recipient),
                s(&n.template),
                s(n.language.as_str()),
                j(&n.payload),
                t(&n.created_at),
                t_opt(&n.sent_at),
            ],
        )?;
        Ok(())
    }

    fn list_notifications(&mut self, org: OrgId) -> StoreResult<Vec<Notification>> {
        self.all(
            concat!("SELECT ", notification_cols!(), " FROM notifications WHERE org_id = ?1 ORDER BY created_at, id"),
            vec![u(org)],
            notification_row,
        )
    }
}

impl billing_core::consumer::ConsumerTx for SqliteTx<'_> {
    fn insert_consumer(&mut self, c: &Consumer) -> StoreResult<()> {
        self.exec(
            "INSERT INTO consumers (id, org_id, branch_id, name, phone_number, email, email_lower, external_id, iban, alias, comment, preferred_language, communication_methods, consumer_type, address, vat_number, commercial_registration, external_metadata, is_deleted, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
            consumer_params(c),
        )?;
        Ok(())
    }

    fn consumer(&mut self, branch: BranchId, consumer: ConsumerId) -> StoreResult<Option<Consumer>> {
        self.one(
            concat!("SELECT ", consumer_cols!(), " FROM consumers WHERE id = ?1 AND branch_id = ?2"),
            vec![u(consumer), u(branch)],
            consumer_row,
        )
    }

    fn update_consumer(&mut self, c: &Consumer) -> StoreResult<()> {
        self.exec(
            "UPDATE consumers SET org_id = ?2, branch_id = ?3, name = ?4, phone_number = ?5, email = ?6, email_lower = ?7, external_id = ?8, iban = ?9, alias = ?10, comment = ?11, preferred_language = ?12, communication_methods = ?13, consumer_type = ?14, address = ?15, vat_number = ?16, commercial_registration = ?17, external_metadata = ?18, is_deleted = ?19, created_at = ?20, updated_at = ?21 WHERE id = ?1",
            consumer_params(c),
        )?;
        Ok(())
    }

    fn consumer_conflict(&mut self, branch: BranchId, phone: Option<&str>, email_lower: Option<&str>, except: ConsumerId) -> StoreResult<Option<Consumer>> {
        // Two lookups rather than `phone = ? OR email = ?`: each one is served by its partial
        // unique index, while the OR would scan the whole branch.
        if let Some(p) = phone {
            let hit = self.one(
                concat!(
                    "SELECT ",
                    consumer_cols!(),
                    " FROM consumers WHERE branch_id = ?1 AND phone_number = ?2 AND is_deleted = 0 AND id <> ?3 LIMIT 1"
                ),
                vec![u(branch), s(p), u(except)],
                consumer_row,
            )?;
            if hit.is_some() {
                return Ok(hit);
            }
        }
        if let Some(e) = email_lower {
            return self.one(
                concat!(
                    "SELECT ",
                    consumer_cols!(),
                    " FROM consumers WHERE branch_id = ?1 AND email_lower = ?2 AND is_deleted = 0 AND id <> ?3 LIMIT 1"
                ),
                vec![u(branch), s(e), u(except)],
                consumer_row,
            );
        }
        Ok(None)
    }

    fn list_consumers(&mut self, branch: BranchId, q: &ListQuery<ConsumerSort>, f: &ConsumerFilter) -> StoreResult<Page<Consumer>> {
        let mut sql = String::from("FROM consumers WHERE branch_id = ?1 AND is_deleted = 0");
        let mut params = vec![u(branch)];
        if let Some(term) = &q.search {
            if term.chars().count() >= 3 {
                // Trigram phrase query on the search index: a case-insensitive substring of any
                // searched column; or the exact IBAN. `+branch_id` keeps the planner from walking
                // the whole branch by its index: the matching rows drive the query instead.
                sql = sql.replacen("WHERE branch_id = ?1", "WHERE +branch_id = ?1", 1);
                let n = params.len();
                sql.push_str(&format!(
                    " AND seq IN (SELECT rowid FROM consumers_search WHERE consumers_search MATCH ?{a} \
                     UNION SELECT seq FROM consumers WHERE branch_id = ?1 AND iban = ?{b} AND is_deleted = 0)",
                    a = n + 1,
                    b = n + 2
                ));
                params.push(s(format!("\"{}\"", term.replace('"', "\"\""))));
                params.push(s(term.as_str()));
            } else {
                // Too short for trigrams: scan the branch.
                let iban = format!(" OR iban = ?{}", params.len() + 2);
                folded_search(&mut sql, &mut params, &["name", "email", "phone_number", "alias", "external_id"], term, &iban);
                params.push(s(term.as_str()));
            }
        }
        if let Some(ext) = &f.external_id {
            sql.push_str(&format!(" AND external_id = ?{}", params.len() + 1));
            params.push(s(ext.as_str()));
        }
        metadata_filter(&mut sql, &mut params, &f.metadata);
        let order = match q.sort {
            ConsumerSort::Name => "name",
            ConsumerSort::CreatedAt => "created_at",
            ConsumerSort::Email => "email",
            ConsumerSort::PhoneNumber => "phone_number",
            ConsumerSort::ExternalId => "external_id",
        };
        self.page(
            concat!("SELECT ", consumer_cols!()),
            &sql,
            params,
            Paging {
                order,
                dir: q.direction,
                page: q.page,
                limit: q.limit,
            },
            consumer_row,
        )
    }
}

impl billing_core::product::ProductTx for SqliteTx<'_> {
    fn insert_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()> {
        self.exec(
            concat!(
                "INSERT INTO products (",
                product_cols_w!(),
                ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
            ),
            product_params(p, default_currency),
        )?;
        self.upsert_prices(p)
    }

    fn product(&mut self, branch: BranchId, product: ProductId) -> StoreResult<Option<Product>> {
        let Some(mut p) = self.one(
            concat!("SELECT ", product_cols!(), " FROM products WHERE id = ?1 AND branch_id = ?2 AND is_deleted = 0"),
            vec![u(product), u(branch)],
            product_row,
        )?
        else {
            return Ok(None);
        };
        p.prices = self.prices_of(p.id)?;
        Ok(Some(p))
    }

    fn update_product(&mut self, p: &Product, default_currency: Currency) -> StoreResult<()> {
        self.exec(
            "UPDATE products SET org_id = ?2, branch_id = ?3, name = ?4, description = ?5, product_type = ?6, recurring_interval = ?7, recurring_interval_count = ?8, is_active = ?9, external_metadata = ?10, sort_price = ?11, used_in_finalized_invoice = ?12, is_deleted = ?13, created_at = ?14, updated_at = ?15 WHERE id = ?1",
            product_params(p, default_currency),
        )?;
        self.upsert_prices(p)
    }

    fn list_products(&mut self, branch: BranchId, q: &ListQuery<ProductSort>, f: &ProductFilter) -> StoreResult<Page<Product>> {
        let mut sql = String::from("FROM products WHERE branch_id = ?1 AND is_deleted = 0");
        let mut params = vec![u(branch)];
        if let Some(term) = &q.search {
            folded_search(&mut sql, &mut params, &["name", "description"], term, "");
        }
        if let Some(a) = f.active {
            sql.push_str(&format!(" AND is_active = ?{}", params.len() + 1));
            params.push(b(a));
        }
        if let Some(t) = f.product_type {
            sql.push_str(&format!(" AND product_type = ?{}", params.len() + 1));
            params.push(s(t.as_str()));
        }
        if let Some(c) = &f.currency {
            sql.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM product_prices pp WHERE pp.product_id = products.id AND pp.is_active = 1 AND pp.currency = ?{})",
                params.len() + 1
            ));
            params.push(s(c.as_str()));
        }
        metadata_filter(&mut sql, &mut params, &f.metadata);
        let order = match q.sort {
            ProductSort::Price => "sort_price",
            ProductSort::Name => "name",
            ProductSort::CreatedAt => "created_at",
        };
        let mut page = self.page(
            concat!("SELECT ", product_cols!()),
            &sql,
            params,
            Paging {
                order,
                dir: q.direction,
                page: q.page,
                limit: q.limit,
            },
            product_row,
        )?;
        for p in page.items.iter_mut() {
            p.prices = self.prices_of(p.id)?;
        }
        Ok(page)
    }
}

impl billing_core::coupon::CouponTx for SqliteTx<'_> {
    fn insert_coupon(&mut self, c: &Coupon) -> StoreResult<()> {
        self.exec(
            "INSERT INTO coupons (id, org_id, branch_id, name, is_percentage, discount_value, currency, is_active, used_in_finalized_invoice, is_deleted, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            coupon_params(c),
        )?;
        Ok(())
    }

    fn coupon(&mut self, branch: BranchId, coupon: CouponId) -> StoreResult<Option<Coupon>> {
        self.one(
            concat!("SELECT ", coupon_cols!(), " FROM coupons WHERE id = ?1 AND branch_id = ?2 AND is_deleted = 0"),
            vec![u(coupon), u(branch)],
            coupon_row,
        )
    }

    fn update_coupon(&mut self, c: &Coupon) -> StoreResult<()> {
        self.exec(
            "UPDATE coupons SET org_id = ?2, branch_id = ?3, name = ?4, is_percentage = ?5, discount_value = ?6, currency = ?7, is_active = ?8, used_in_finalized_invoice = ?9, is_deleted = ?10, created_at = ?11, updated_at = ?12 WHERE id = ?1",
            coupon_params(c),
        )?;
        Ok(())
    }

    fn list_coupons(&mut self, branch: BranchId, q: &ListQuery<CouponSort>, f: &CouponFilter) -> StoreResult<Page<Coupon>> {
        let mut sql = String::from("FROM coupons WHERE branch_id = ?1 AND is_deleted = 0");
        let mut params = vec![u(branch)];
        if let Some(term) = &q.search {
            folded_search(&mut sql, &mut params, &["name"], term, "");
        }
        if let Some(a) = f.active {
            sql.push_str(&format!(" AND is_active = ?{}", params.len() + 1));
            params.push(b(a));
        }
        if let Some(p) = f.is_percentage {
            sql.push_str(&format!(" AND is_percentage = ?{}", params.len() + 1));
            params.push(b(p));
        }
        let order = match q.sort {
            CouponSort::CreatedAt => "created_at",
            CouponSort::UpdatedAt => "updated_at",
            CouponSort::Name => "name",
            CouponSort::DiscountValue => "discount_value",
        };
        self.page(
            concat!("SELECT ", coupon_cols!()),
            &sql,
            params,
            Paging {
                order,
                dir: q.direction,
                page: q.page,
                limit: q.limit,
            },
            coupon_row,
        )
    }

    fn redeem_coupon(&mut self, coupon: CouponId) -> StoreResult<()> {
        self.exec("UPDATE coupons SET redemptions = redemptions + 1 WHERE id = ?1", vec![u(coupon)])
            .map(drop)
    }
}

impl billing_core::event::EventTx for SqliteTx<'_> {
    fn insert_event(&mut self, e: &Event) -> StoreResult<()> {
        self.exec(
            concat!("INSERT INTO events (", event_cols!(), ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
            vec![
                u(e.id),
                u(e.org_id),
                u(e.branch_id),
                s(e.event_type.as_str()),
                s(e.entity_type.as_str()),
                u(e.entity_id),
                j(&e.payload),
                t(&e.created_at),
            ],
        )?;
        Ok(())
    }

    fn list_events(&mut self, org: OrgId) -> StoreResult<Vec<Event>> {
        self.all(
            concat!("SELECT ", event_cols!(), " FROM events WHERE org_id = ?1 ORDER BY seq"),
            vec![u(org)],
            event_row,
        )
    }

    fn event_by_id(&mut self, id: EventId) -> StoreResult<Option<Event>> {
        self.one(
            "SELECT id, org_id, branch_id, event_type, entity_type, entity_id, payload, created_at FROM events WHERE id = ?1",
            vec![u(id)],
            event_row,
        )
    }
}

impl SqliteTx<'_> {
    fn upsert_prices(&self, p: &Product) -> StoreResult<()> {
        // Deactivations first, so that a currency moving to a new active price never has two.
        let mut ordered: Vec<&ProductPrice> = p.prices.iter().collect();
        ordered.sort_by_key(|x| x.is_active);
        for pr in ordered {
            self.exec(
                concat!("INSERT INTO product_prices (", price_cols!(), ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT(id) DO UPDATE SET currency = excluded.currency, amount = excluded.amount, vat_mode = excluded.vat_mode, is_active = excluded.is_active, updated_at = excluded.updated_at"),
                vec![u(pr.id), u(pr.product_id), s(pr.currency().code()), i(pr.amount.to_stored().expect("amount in the stored range")), s(pr.vat_mode.as_str()), b(pr.is_active), t(&pr.created_at), t_opt(&pr.updated_at)],
            )?;
        }
        Ok(())
    }
}
