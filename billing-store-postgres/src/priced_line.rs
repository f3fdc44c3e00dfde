//! Priced lines, stored alike wherever they are kept: an invoice's items, a payment link's and a
//! subscription's are each a `billing_model::invoice::InvoiceItem` (product, price, quantity,
//! VAT mode, coupons and the amounts they come to), kept in a table of their owner's
//! (`invoice_items`, `payment_link_items`, `subscription_items`) with the owner's id, the
//! line's position and, after the line's own columns, those of the table alone (a link item's
//! quantity bounds, an item's `updated_at`).
//!
//! Such a table is declared with [`line_table!`] (its columns after the line's, and the names
//! of what it generates); the line's columns are [`LineRow`], one type for every table, and the
//! reads and writes ([`PgTx::lines_of`], [`PgTx::write_lines`], [`line_rows`]) serve them all
//! through [`LineTable`]. Amounts are in the owner's currency.

use crate::support::*;
use billing_model::invoice::InvoiceItem;
use billing_model::money::{Currency, Money};
use billing_model::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_model::product::VatMode;
use diesel::pg::PgConnection;
use diesel::QueryResult;
use std::collections::HashMap;

/// A priced line's own columns, whatever table keeps it.
#[derive(Debug, Clone)]
pub(crate) struct LineRow {
    pub id: Uuid,
    pub product_id: Uuid,
    pub price_id: Option<Uuid>,
    pub quantity: i64,
    pub unit_price: i64,
    pub vat_mode: String,
    pub one_time: bool,
    pub coupon_ids: Value,
    pub original_amount: i64,
    pub discounted_amount: i64,
    pub coupons: Value,
    pub vat_amount: i64,
    pub excluding_vat: i64,
    pub created_at: Ts,
}

impl LineRow {
    /// The row `id` of line `l` (a link's or subscription's item has an id of its own, which its
    /// line is read back with).
    pub(crate) fn new(id: Uuid, l: &InvoiceItem) -> StoreResult<Self> {
        Ok(LineRow {
            id,
            product_id: l.product_id.0,
            price_id: l.price_id.map(|p| p.0),
            quantity: i64::from(l.quantity),
            unit_price: m(l.unit_price)?,
            vat_mode: l.vat_mode.as_str().into(),
            one_time: l.one_time,
            coupon_ids: to_json("coupon_ids", &l.coupon_ids),
            original_amount: m(l.original_amount)?,
            discounted_amount: m(l.discounted_amount)?,
            coupons: lines_to_stored(&l.coupons)?,
            vat_amount: m(l.vat_amount)?,
            excluding_vat: m(l.excluding_vat)?,
            created_at: l.created_at,
        })
    }

    /// The line, its amounts in `c`.
    pub(crate) fn into_line(self, c: Currency) -> StoreResult<InvoiceItem> {
        let mo = |x: i64| Money::from_stored(x, c);
        Ok(InvoiceItem {
            id: self.id.into(),
            product_id: self.product_id.into(),
            price_id: self.price_id.map(Into::into),
            quantity: u32::try_from(self.quantity).map_err(|_| unreadable("quantity", self.quantity))?,
            unit_price: mo(self.unit_price),
            vat_mode: parsed("VAT mode", &self.vat_mode, VatMode::parse)?,
            one_time: self.one_time,
            coupon_ids: from_json("coupon ids", self.coupon_ids)?,
            original_amount: mo(self.original_amount),
            discounted_amount: mo(self.discounted_amount),
            coupons: lines_from_stored(&self.coupons, c),
            vat_amount: mo(self.vat_amount),
            excluding_vat: mo(self.excluding_vat),
            created_at: self.created_at,
        })
    }
}

/// A table of priced lines, as [`line_table!`] declares it.
pub(crate) trait LineTable {
    /// A row of the table.
    type Row;
    /// The values of the table's own columns (after the line's).
    type Own;
    /// The row of `owner`'s line at `position`.
    fn row(owner: Uuid, position: i32, line: LineRow, own: Self::Own) -> Self::Row;
    /// A row's owner, line and own columns.
    fn parts(row: Self::Row) -> (Uuid, LineRow, Self::Own);
    /// The rows of `owners`, by owner and in their order.
    fn load(c: &mut PgConnection, owners: &[Uuid]) -> QueryResult<Vec<Self::Row>>;
    /// Deletes `owner`'s rows.
    fn delete(c: &mut PgConnection, owner: Uuid) -> QueryResult<usize>;
    /// Inserts `rows` (one statement).
    fn insert(c: &mut PgConnection, rows: &[Self::Row]) -> QueryResult<usize>;
}

/// Declares a table of priced lines: its `diesel::table!` (the owner's id column, `position`,
/// the line's columns, then the table's own), its row type, the type of its own columns' values
/// and the [`LineTable`] that reads and writes it.
macro_rules! line_table {
    (
        $(#[$meta:meta])*
        $table:ident ($owner:ident) as $name:ident, rows $row:ident, own $own:ident {
            $( $col:ident -> $sql:ty : $field:ty ),* $(,)?
        }
    ) => {
        diesel::table! {
            $table (id) {
                id -> Uuid,
                $owner -> Uuid,
                position -> Int4,
                product_id -> Uuid,
                price_id -> Nullable<Uuid>,
                quantity -> Int8,
                unit_price -> Int8,
                vat_mode -> Text,
                one_time -> Bool,
                coupon_ids -> Jsonb,
                original_amount -> Int8,
                discounted_amount -> Int8,
                coupons -> Jsonb,
                vat_amount -> Int8,
                excluding_vat -> Int8,
                created_at -> Timestamptz,
                $( $col -> $sql, )*
            }
        }

        $(#[$meta])*
        pub(crate) struct $name;

        /// A row of the table.
        #[derive(diesel::Queryable, diesel::Selectable, diesel::Insertable, Debug)]
        #[diesel(table_name = $table, treat_none_as_default_value = false)]
        pub(crate) struct $row {
            id: Uuid,
            $owner: Uuid,
            position: i32,
            product_id: Uuid,
            price_id: Option<Uuid>,
            quantity: i64,
            unit_price: i64,
            vat_mode: String,
            one_time: bool,
            coupon_ids: Value,
            original_amount: i64,
            discounted_amount: i64,
            coupons: Value,
            vat_amount: i64,
            excluding_vat: i64,
            created_at: Ts,
            $( $col: $field, )*
        }

        /// The values of the table's own columns.
        #[derive(Debug, Clone)]
        pub(crate) struct $own {
            $( pub $col: $field, )*
        }

        impl $crate::priced_line::LineTable for $name {
            type Row = $row;
            type Own = $own;

            #[allow(unused_variables)]
            fn row(owner: Uuid, position: i32, line: $crate::priced_line::LineRow, own: $own) -> $row {
                let $crate::priced_line::LineRow {
                    id, product_id, price_id, quantity, unit_price, vat_mode, one_time, coupon_ids,
                    original_amount, discounted_amount, coupons, vat_amount, excluding_vat, created_at,
                } = line;
                $row {
                    id, $owner: owner, position, product_id, price_id, quantity, unit_price, vat_mode, one_time,
                    coupon_ids, original_amount, discounted_amount, coupons, vat_amount, excluding_vat, created_at,
                    $( $col: own.$col, )*
                }
            }

            fn parts(row: $row) -> (Uuid, $crate::priced_line::LineRow, $own) {
                let $row {
                    id, $owner, position: _, product_id, price_id, quantity, unit_price, vat_mode, one_time,
                    coupon_ids, original_amount, discounted_amount, coupons, vat_amount, excluding_vat, created_at,
                    $( $col, )*
                } = row;
                let line = $crate::priced_line::LineRow {
                    id, product_id, price_id, quantity, unit_price, vat_mode, one_time, coupon_ids,
                    original_amount, discounted_amount, coupons, vat_amount, excluding_vat, created_at,
                };
                ($owner, line, $own { $( $col, )* })
            }

            fn load(c: &mut diesel::pg::PgConnection, owners: &[Uuid]) -> diesel::QueryResult<Vec<$row>> {
                use diesel::prelude::*;
                $table::table
                    .filter($table::$owner.eq_any(owners))
                    .order_by(($table::$owner, $table::position))
                    .select(<$row>::as_select())
                    .load(c)
            }

            fn delete(c: &mut diesel::pg::PgConnection, owner: Uuid) -> diesel::QueryResult<usize> {
                use diesel::prelude::*;
                diesel::delete($table::table.filter($table::$owner.eq(owner))).execute(c)
            }

            fn insert(c: &mut diesel::pg::PgConnection, rows: &[$row]) -> diesel::QueryResult<usize> {
                use diesel::prelude::*;
                diesel::insert_into($table::table).values(rows).execute(c)
            }
        }
    };
}

pub(crate) use line_table;

/// The rows of `owner`'s lines, in order, each given as (the row's id, the line, the values of
/// the table's own columns).
pub(crate) fn line_rows<'l, T: LineTable>(owner: Uuid, lines: impl IntoIterator<Item = (Uuid, &'l InvoiceItem, T::Own)>) -> StoreResult<Vec<T::Row>> {
    lines
        .into_iter()
        .enumerate()
        .map(|(k, (id, line, own))| Ok(T::row(owner, k as i32, LineRow::new(id, line)?, own)))
        .collect()
}

/// The lines of several owners, read together: [`Lines::of`] takes each owner's.
pub(crate) struct Lines<T: LineTable> {
    by_owner: HashMap<Uuid, Vec<(LineRow, T::Own)>>,
}

impl<T: LineTable> Lines<T> {
    /// `owner`'s lines in their order, their amounts in `c`, each with its table's own columns.
    pub(crate) fn of(&mut self, owner: Uuid, c: Currency) -> StoreResult<Vec<(InvoiceItem, T::Own)>> {
        let rows = self.by_owner.remove(&owner).unwrap_or_default();
        rows.into_iter().map(|(line, own)| Ok((line.into_line(c)?, own))).collect()
    }
}

impl PgTx<'_> {
    /// The lines of `owners` (one statement, run apart: see `deferred`).
    pub(crate) fn lines_of<T: LineTable>(&mut self, owners: &[Uuid]) -> StoreResult<Lines<T>> {
        let rows = self.read_apart(|c| T::load(c, owners))?;
        let mut by_owner: HashMap<Uuid, Vec<(LineRow, T::Own)>> = HashMap::new();
        for row in rows {
            let (owner, line, own) = T::parts(row);
            by_owner.entry(owner).or_default().push((line, own));
        }
        Ok(Lines { by_owner })
    }

    /// Writes `owner`'s lines (see [`line_rows`]) in one write: replaces what it had, or
    /// (`replace` false, for a new owner, which has none yet) only inserts them.
    pub(crate) fn write_lines<'l, T: LineTable>(
        &mut self,
        owner: Uuid,
        replace: bool,
        lines: impl IntoIterator<Item = (Uuid, &'l InvoiceItem, T::Own)>,
    ) -> StoreResult<()> {
        let rows = line_rows::<T>(owner, lines)?;
        self.write(|c| {
            if replace {
                T::delete(c, owner)?;
            }
            if rows.is_empty() {
                return Ok(0);
            }
            T::insert(c, &rows)
        })
        .map(drop)
    }
}
