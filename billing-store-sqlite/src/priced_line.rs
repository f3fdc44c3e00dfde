//! Priced lines, stored alike wherever they are kept: an invoice's items, a payment link's and a
//! subscription's are each a `billing_model::invoice::InvoiceItem` (product, price, quantity,
//! VAT mode, coupons and the amounts they come to), kept in a table of their owner's
//! (`invoice_items`, `payment_link_items`, `subscription_items`) with the owner's id, the
//! line's position and, after the line's own columns, those of the table alone (a link item's
//! quantity bounds, an item's `updated_at`). A [`LineTable`] names such a table; the reads and
//! writes below serve all of them. Amounts are in the owner's currency, read with each line.

use crate::sql::*;
use billing_model::invoice::InvoiceItem;
use billing_model::money::{Currency, Money};
use billing_model::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_model::product::VatMode;
use billing_model::store::StoreResult;
use rusqlite::types::Value as SqlValue;
use rusqlite::Row;
use serde_json::Value;
use std::sync::OnceLock;
use uuid::Uuid;

/// A line's own columns, in the order [`line_params`] writes them and [`read_line`] reads them.
const LINE: &[&str] = &[
    "id",
    "product_id",
    "price_id",
    "quantity",
    "unit_price",
    "vat_mode",
    "one_time",
    "coupon_ids",
    "original_amount",
    "discounted_amount",
    "coupons",
    "vat_amount",
    "excluding_vat",
    "created_at",
];

/// A table of priced lines.
pub struct LineTable {
    table: &'static str,
    /// The column of the owner's id (`invoice_id`).
    owner: &'static str,
    /// The owner's table, which has the lines' currency.
    owners: &'static str,
    /// The table's own columns, written and read after the line's.
    own: &'static [&'static str],
    sql: OnceLock<Statements>,
}

struct Statements {
    /// The lines of one owner, in their order: the line's columns, the table's own, the currency.
    select: String,
    /// The lines of several owners (then the owner's id), up to the list of owners: `IN (` is
    /// followed by the placeholders and `) ORDER BY position`.
    select_many: String,
    insert: String,
    delete: String,
}

impl LineTable {
    pub const fn new(table: &'static str, owner: &'static str, owners: &'static str, own: &'static [&'static str]) -> Self {
        LineTable {
            table,
            owner,
            owners,
            own,
            sql: OnceLock::new(),
        }
    }

    fn sql(&self) -> &Statements {
        self.sql.get_or_init(|| {
            let (table, owner) = (self.table, self.owner);
            let columns: Vec<&str> = LINE.iter().chain(self.own).copied().collect();
            let written: Vec<&str> = [owner, "position"].into_iter().chain(columns.iter().copied()).collect();
            let marks: Vec<String> = (1..=written.len()).map(|k| format!("?{k}")).collect();
            Statements {
                select: format!(
                    "SELECT {}, (SELECT currency FROM {} o WHERE o.id = {table}.{owner}) FROM {table} WHERE {owner} = ?1 ORDER BY position",
                    columns.join(", "),
                    self.owners
                ),
                select_many: format!(
                    "SELECT {}, (SELECT currency FROM {} o WHERE o.id = {table}.{owner}), {owner} FROM {table} WHERE {owner} IN (",
                    columns.join(", "),
                    self.owners
                ),
                insert: format!("INSERT INTO {table} ({}) VALUES ({})", written.join(", "), marks.join(", ")),
                delete: format!("DELETE FROM {table} WHERE {owner} = ?1"),
            }
        })
    }
}

impl SqliteTx<'_> {
    /// The lines of `owner`, in their order: `item` makes each of its line and the table's own
    /// columns (read from the row from `at` on).
    pub fn lines<T>(
        &self,
        table: &LineTable,
        owner: impl Into<Uuid>,
        mut item: impl FnMut(InvoiceItem, &Row, usize) -> rusqlite::Result<T>,
    ) -> StoreResult<Vec<T>> {
        let currency_at = LINE.len() + table.own.len();
        self.all(&table.sql().select, vec![u(owner.into())], |r| {
            let line = read_line(r, get_currency(r, currency_at)?)?;
            item(line, r, LINE.len())
        })
    }

    /// The lines of every one of `owners` in one statement, as (owner, item), each owner's in
    /// their order; `item` as in [`Self::lines`].
    pub fn lines_of_many<T>(
        &self,
        table: &LineTable,
        owners: &[Uuid],
        mut item: impl FnMut(InvoiceItem, &Row, usize) -> rusqlite::Result<T>,
    ) -> StoreResult<Vec<(Uuid, T)>> {
        if owners.is_empty() {
            return Ok(vec![]);
        }
        let currency_at = LINE.len() + table.own.len();
        let marks: Vec<String> = (1..=owners.len()).map(|k| format!("?{k}")).collect();
        let sql = format!("{}{}) ORDER BY position", table.sql().select_many, marks.join(", "));
        self.all(&sql, owners.iter().map(|o| u(*o)).collect(), |r| {
            let line = read_line(r, get_currency(r, currency_at)?)?;
            let owner: Uuid = r.get(currency_at + 1)?;
            Ok((owner, item(line, r, LINE.len())?))
        })
    }

    /// Writes `owner`'s lines, in order, each as (the row's id, the line, the values of the
    /// table's own columns): replaces what it had, or (`replace` false, for a new owner) only
    /// inserts. (A link's or subscription's item has an id of its own, which its line is read
    /// back with.)
    pub fn write_lines<'l>(
        &self,
        table: &LineTable,
        owner: impl Into<Uuid>,
        replace: bool,
        lines: impl IntoIterator<Item = (Uuid, &'l InvoiceItem, Vec<SqlValue>)>,
    ) -> StoreResult<()> {
        let owner = owner.into();
        let sql = table.sql();
        if replace {
            self.exec(&sql.delete, vec![u(owner)])?;
        }
        for (k, (id, line, own)) in lines.into_iter().enumerate() {
            let mut params = vec![u(owner), i(k as i64)];
            params.extend(line_params(id, line)?);
            params.extend(own);
            self.exec(&sql.insert, params)?;
        }
        Ok(())
    }
}

/// The values of a line's columns ([`LINE`]), for the row `id`.
fn line_params(id: Uuid, l: &InvoiceItem) -> StoreResult<Vec<SqlValue>> {
    Ok(vec![
        u(id),
        u(l.product_id),
        u_opt(l.price_id),
        i(i64::from(l.quantity)),
        m(&l.unit_price)?,
        s(l.vat_mode.as_str()),
        b(l.one_time),
        j(&l.coupon_ids),
        m(&l.original_amount)?,
        m(&l.discounted_amount)?,
        j(&lines_to_stored(&l.coupons)?),
        m(&l.vat_amount)?,
        m(&l.excluding_vat)?,
        t(&l.created_at),
    ])
}

/// A line from the start of the row ([`LINE`]), its amounts in `c`.
fn read_line(r: &Row, c: Currency) -> rusqlite::Result<InvoiceItem> {
    Ok(InvoiceItem {
        id: get_id(r, 0)?,
        product_id: get_id(r, 1)?,
        price_id: get_id_opt(r, 2)?,
        quantity: get_count(r, 3)?,
        unit_price: Money::from_stored(r.get::<_, i64>(4)?, c),
        vat_mode: get_parsed(r, 5, VatMode::parse)?,
        one_time: r.get(6)?,
        coupon_ids: get_json(r, 7)?,
        original_amount: Money::from_stored(r.get::<_, i64>(8)?, c),
        discounted_amount: Money::from_stored(r.get::<_, i64>(9)?, c),
        coupons: lines_from_stored(&get_json::<Value>(r, 10)?, c),
        vat_amount: Money::from_stored(r.get::<_, i64>(11)?, c),
        excluding_vat: Money::from_stored(r.get::<_, i64>(12)?, c),
        created_at: get_ts(r, 13)?,
    })
}
