//! `billing_core::invoice::InvoiceTx` for this store.

use crate::rows::*;
use crate::tx::{Paging, SqliteTx};
use billing_core::error::StoreError;
use billing_core::ids::*;
use billing_core::invoice::*;
use billing_core::list::{ListQuery, Page};
use billing_core::money::{Currency, Money};
use billing_core::payment::*;
use billing_core::pricing::totals::{lines_from_stored, lines_to_stored};
use billing_core::product::VatMode;
use billing_core::store::StoreResult;
use rusqlite::types::Value as SqlValue;
use rusqlite::Row;
use std::str::FromStr;

macro_rules! invoice_cols {
    () => {
        "id, org_id, branch_id, user_id, consumer_id, org_invoice_number, description, currency, status, payment_methods, coupon_ids, exclude_coupons_if_installments, notify_consumer, scheduled_on, original_amount, item_level_discounted_amount, total_vat_amount, total_price_excluding_vat, total_amount, paid_amount, coupons, installments, payment_link_id, subscription_id, created_at, updated_at"
    };
}
macro_rules! item_cols {
    () => {
        "id, invoice_id, position, product_id, price_id, quantity, unit_price, vat_mode, one_time, coupon_ids, original_amount, discounted_amount, coupons, vat_amount, excluding_vat, created_at"
    };
}
macro_rules! payment_cols {
    () => {
        "id, org_id, branch_id, invoice_id, number, amount, currency, payment_type, method, status, scheduled_on, payed_at, refunded_at, refund_reason, refund_note, note, transaction_id, latest_pgw_message, created_at, updated_at"
    };
}
macro_rules! card_cols {
    () => {
        "id, org_id, consumer_id, network, last_four, expiry_month, expiry_year, gateway_token, is_active, consent, created_at"
    };
}

fn currency(r: &Row, i: usize) -> rusqlite::Result<Currency> {
    parsed(r, i, |s| Currency::from_str(s).ok())
}

fn money(r: &Row, i: usize, c: Currency) -> rusqlite::Result<Money> {
    Ok(Money::from_stored(r.get(i)?, c))
}

fn invoice_row(r: &Row) -> rusqlite::Result<Invoice> {
    let c = currency(r, 7)?;
    let coupons: serde_json::Value = json(r, 20)?;
    Ok(Invoice {
        id: id(r, 0)?,
        org_id: id(r, 1)?,
        branch_id: id(r, 2)?,
        user_id: id(r, 3)?,
        consumer_id: id(r, 4)?,
        org_invoice_number: r.get(5)?,
        description: r.get(6)?,
        currency: c,
        status: parsed(r, 8, InvoiceStatus::parse)?,
        payment_methods: json(r, 9)?,
        coupon_ids: json(r, 10)?,
        exclude_coupons_if_installments: r.get(11)?,
        notify_consumer: r.get(12)?,
        scheduled_on: ts(r, 13)?,
        original_amount: money(r, 14, c)?,
        item_level_discounted_amount: money(r, 15, c)?,
        total_vat_amount: money(r, 16, c)?,
        total_price_excluding_vat: money(r, 17, c)?,
        total_amount: money(r, 18, c)?,
        paid_amount: money(r, 19, c)?,
        coupons: lines_from_stored(&coupons, c),
        installments: r.get::<_, Option<i64>>(21)?.map(|n| n as u8),
        payment_link_id: r.get(22)?,
        subscription_id: r.get(23)?,
        items: vec![],
        created_at: ts(r, 24)?,
        updated_at: ts_opt(r, 25)?,
    })
}

fn invoice_params(v: &Invoice) -> Vec<SqlValue> {
    vec![
        u(v.id),
        u(v.org_id),
        u(v.branch_id),
        u(v.user_id),
        u(v.consumer_id),
        i(v.org_invoice_number),
        s_opt(v.description.as_deref()),
        s(v.currency.code()),
        s(v.status.as_str()),
        j(&v.payment_methods),
        j(&v.coupon_ids),
        b(v.exclude_coupons_if_installments),
        b(v.notify_consumer),
        t(&v.scheduled_on),
        i(v.original_amount.to_stored().expect("amount in the stored range")),
        i(v.item_level_discounted_amount.to_stored().expect("amount in the stored range")),
        i(v.total_vat_amount.to_stored().expect("amount in the stored range")),
        i(v.total_price_excluding_vat.to_stored().expect("amount in the stored range")),
        i(v.total_amount.to_stored().expect("amount in the stored range")),
        i(v.paid_amount.to_stored().expect("amount in the stored range")),
        j(&lines_to_stored(&v.coupons).expect("amounts in the stored range")),
        v.installments.map(|n| i(i64::from(n))).unwrap_or(SqlValue::Null),
        v.payment_link_id.map(u).unwrap_or(SqlValue::Null),
        v.subscription_id.map(u).unwrap_or(SqlValue::Null),
        t(&v.created_at),
        t_opt(&v.updated_at),
    ]
}

fn item_row(r: &Row, c: Currency) -> rusqlite::Result<InvoiceItem> {
    let coupons: serde_json::Value = json(r, 12)?;
    Ok(InvoiceItem {
        id: id(r, 0)?,
        product_id: id(r, 3)?,
        price_id: id_opt(r, 4)?,
        quantity: r.get::<_, i64>(5)? as u32,
        unit_price: money(r, 6, c)?,
        vat_mode: parsed(r, 7, VatMode::parse)?,
        one_time: r.get(8)?,
        coupon_ids: json(r, 9)?,
        original_amount: money(r, 10, c)?,
        discounted_amount: money(r, 11, c)?,
        coupons: lines_from_stored(&coupons, c),
        vat_amount: money(r, 13, c)?,
        excluding_vat: money(r, 14, c)?,
        created_at: ts(r, 15)?,
    })
}

fn payment_row(r: &Row) -> rusqlite::Result<Payment> {
    let c = currency(r, 6)?;
    Ok(Payment {
        id: id(r, 0)?,
        org_id: id(r, 1)?,
        branch_id: id(r, 2)?,
        invoice_id: id(r, 3)?,
        number: r.get::<_, i64>(4)? as u32,
        amount: money(r, 5, c)?,
        payment_type: parsed(r, 7, PaymentType::parse)?,
        method: r.get::<_, Option<String>>(8)?.and_then(|m| PaymentMethod::parse(&m)),
        status: parsed(r, 9, PaymentStatus::parse)?,
        scheduled_on: ts(r, 10)?,
        payed_at: ts_opt(r, 11)?,
        refunded_at: ts_opt(r, 12)?,
        refund_reason: r.get::<_, Option<String>>(13)?.and_then(|m| RefundReason::parse(&m)),
        refund_note: r.get(14)?,
        note: r.get(15)?,
        transaction_id: r.get(16)?,
        latest_pgw_message: r.get(17)?,
        created_at: ts(r, 18)?,
        updated_at: ts_opt(r, 19)?,
    })
}

fn payment_params(p: &Payment) -> Vec<SqlValue> {
    vec![
        u(p.id),
        u(p.org_id),
        u(p.branch_id),
        u(p.invoice_id),
        i(i64::from(p.number)),
        i(p.amount.to_stored().expect("amount in the stored range")),
        s(p.amount.currency().code()),
        s(p.payment_type.as_str()),
        s_opt(p.method.map(|m| m.as_str())),
        s(p.status.as_str()),
        t(&p.scheduled_on),
        t_opt(&p.payed_at),
        t_opt(&p.refunded_at),
        s_opt(p.refund_reason.map(|m| m.as_str())),
        s_opt(p.refund_note.as_deref()),
        s_opt(p.note.as_deref()),
        p.transaction_id.map(u).unwrap_or(SqlValue::Null),
        s_opt(p.latest_pgw_message.as_deref()),
        t(&p.created_at),
        t_opt(&p.updated_at),
    ]
}

fn card_row(r: &Row) -> rusqlite::Result<TokenizedCard> {
    Ok(TokenizedCard {
        id: r.get(0)?,
        org_id: id(r, 1)?,
        consumer_id: id(r, 2)?,
        network: r.get(3)?,
        last_four: r.get(4)?,
        expiry_month: r.get::<_, i64>(5)? as u32,
        expiry_year: r.get::<_, i64>(6)? as u32,
        gateway_token: r.get(7)?,
        is_active: r.get(8)?,
        consent: r.get(9)?,
        created_at: ts(r, 10)?,
    })
}

/// ` AND col IN (?n, ?n+1, …)` for the given values.
fn push_in(sql: &mut String, params: &mut Vec<SqlValue>, col: &str, values: Vec<SqlValue>) {
    let marks: Vec<String> = (0..values.len()).map(|k| format!("?{}", params.len() + 1 + k)).collect();
    sql.push_str(&format!(" AND {col} IN ({})", marks.join(", ")));
    params.extend(values);
}

fn push_cmp(sql: &mut String, params: &mut Vec<SqlValue>, expr: &str, v: SqlValue) {
    sql.push_str(&format!(" AND {expr} ?{}", params.len() + 1));
    params.push(v);
}

impl SqliteTx<'_> {
    fn items_of(&self, inv: &mut Invoice) -> StoreResult<()> {
        let c = inv.currency;
        inv.items = self.all(
            concat!("SELECT ", item_cols!(), " FROM invoice_items WHERE invoice_id = ?1 ORDER BY position"),
            vec![u(inv.id)],
            |r| item_row(r, c),
        )?;
        Ok(())
    }

    fn write_items(&self, inv: &Invoice) -> StoreResult<()> {
        self.exec("DELETE FROM invoice_items WHERE invoice_id = ?1", vec![u(inv.id)])?;
        for (k, it) in inv.items.iter().enumerate() {
            self.exec(
                concat!(
                    "INSERT INTO invoice_items (",
                    item_cols!(),
                    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
                ),
                vec![
                    u(it.id),
                    u(inv.id),
                    i(k as i64),
                    u(it.product_id),
                    it.price_id.map(u).unwrap_or(SqlValue::Null),
                    i(i64::from(it.quantity)),
                    i(it.unit_price.to_stored().expect("amount in the stored range")),
                    s(it.vat_mode.as_str()),
                    b(it.one_time),
                    j(&it.coupon_ids),
                    i(it.original_amount.to_stored().expect("amount in the stored range")),
                    i(it.discounted_amount.to_stored().expect("amount in the stored range")),
                    j(&lines_to_stored(&it.coupons).expect("amounts in the stored range")),
                    i(it.vat_amount.to_stored().expect("amount in the stored range")),
                    i(it.excluding_vat.to_stored().expect("amount in the stored range")),
                    t(&it.created_at),
                ],
            )?;
        }
        Ok(())
    }
}

fn not_found(what: &str) -> StoreError {
    StoreError::NotFound(what.to_string())
}

impl billing_core::invoice::InvoiceTx for SqliteTx<'_> {
    fn next_invoice_number(&mut self, org: OrgId) -> StoreResult<i64> {
        let n = self.one(
            "INSERT INTO invoice_counters (org_id, last_number) VALUES (?1, 1)
             ON CONFLICT(org_id) DO UPDATE SET last_number = last_number + 1 RETURNING last_number",
            vec![u(org)],
            |r| r.get::<_, i64>(0),
        )?;
        n.ok_or_else(|| StoreError::backend("invoice counter returned no row"))
    }

    fn insert_invoice(&mut self, inv: &Invoice) -> StoreResult<()> {
        self.exec(
            concat!(
                "INSERT INTO invoices (",
                invoice_cols!(),
                ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)"
            ),
            invoice_params(inv),
        )?;
        self.write_items(inv)
    }

    fn invoice(&mut self, branch: BranchId, id: InvoiceId) -> StoreResult<Option<Invoice>> {
        let inv = self.one(
            concat!("SELECT ", invoice_cols!(), " FROM invoices WHERE id = ?1 AND branch_id = ?2"),
            vec![u(id), u(branch)],
            invoice_row,
        )?;
        match inv {
            Some(mut inv) => {
                self.items_of(&mut inv)?;
                Ok(Some(inv))
            }
            None => Ok(None),
        }
    }

    fn update_invoice(&mut self, inv: &Invoice) -> StoreResult<()> {
        let mut params = invoice_params(inv);
        // Identity columns (id, org, branch, user, consumer, number, created_at) never change.
        let created = params.remove(24);
        drop(created);
        let n = self.exec(
            "UPDATE invoices SET description = ?7, currency = ?8, status = ?9, payment_methods = ?10, coupon_ids = ?11,
               exclude_coupons_if_installments = ?12, notify_consumer = ?13, scheduled_on = ?14, original_amount = ?15,
               item_level_discounted_amount = ?16, total_vat_amount = ?17, total_price_excluding_vat = ?18, total_amount = ?19,
               paid_amount = ?20, coupons = ?21, installments = ?22, payment_link_id = ?23, subscription_id = ?24, updated_at = ?25
             WHERE id = ?1 AND org_id = ?2 AND branch_id = ?3 AND user_id = ?4 AND consumer_id = ?5 AND org_invoice_number = ?6",
            params,
        )?;
        if n == 0 {
            return Err(not_found("invoice"));
        }
        self.write_items(inv)
    }

    fn list_invoices(&mut self, branch: BranchId, q: &ListQuery<InvoiceSort>, f: &InvoiceFilter) -> StoreResult<Page<Invoice>> {
        let mut sql = String::from("FROM invoices WHERE branch_id = ?1");
        let mut params = vec![u(branch)];
        if let Some(term) = &q.search {
            let n = params.len() + 1;
            let number = term.trim().parse::<i64>().ok();
            sql.push_str(&format!(
                " AND (contains_folded(description, ?{n}) OR EXISTS (SELECT 1 FROM consumers c WHERE c.id = invoices.consumer_id AND contains_folded(c.name, ?{n})){})",
                if number.is_some() { format!(" OR org_invoice_number = ?{}", n + 1) } else { String::new() }
            ));
            params.push(s(term.to_lowercase()));
            if let Some(num) = number {
                params.push(i(num));
            }
        }
        if !f.statuses.is_empty() {
            push_in(&mut sql, &mut params, "status", f.statuses.iter().map(|x| s(x.as_str())).collect());
        }
        for m in &f.has_payments {
            let mut inner = String::new();
            if !m.statuses.is_empty() {
                push_in(&mut inner, &mut params, "p.status", m.statuses.iter().map(|x| s(x.as_str())).collect());
            }
            if !m.methods.is_empty() {
                push_in(&mut inner, &mut params, "p.method", m.methods.iter().map(|x| s(x.as_str())).collect());
            }
            sql.push_str(&format!(" AND EXISTS (SELECT 1 FROM payments p WHERE p.invoice_id = invoices.id{inner})"));
        }
        if let Some(x) = f.payment_link_id {
            push_cmp(&mut sql, &mut params, "payment_link_id =", u(x));
        }
        if let Some(x) = f.subscription_id {
            push_cmp(&mut sql, &mut params, "subscription_id =", u(x));
        }
        if let Some(x) = f.consumer_id {
            push_cmp(&mut sql, &mut params, "consumer_id =", u(x));
        }
        if let Some(x) = &f.from_date {
            push_cmp(&mut sql, &mut params, "created_at >=", t(x));
        }
        if let Some(x) = &f.to_date {
            push_cmp(&mut sql, &mut params, "created_at <=", t(x));
        }
        if let Some(x) = &f.due_date_from {
            push_cmp(&mut sql, &mut params, "scheduled_on >=", t(x));
        }
        if let Some(x) = &f.due_date_to {
            push_cmp(&mut sql, &mut params, "scheduled_on <=", t(x));
        }
        if let Some(x) = f.from_price {
            push_cmp(&mut sql, &mut params, "total_amount >=", i(billing_core::money::stored_bound(x, true)));
        }
        if let Some(x) = f.to_price {
            push_cmp(&mut sql, &mut params, "total_amount <=", i(billing_core::money::stored_bound(x, false)));
        }
        if !f.currencies.is_empty() {
            push_in(&mut sql, &mut params, "currency", f.currencies.iter().map(|c| s(c.code())).collect());
        }
        let order = match q.sort {
            InvoiceSort::CreatedAt => "created_at",
            InvoiceSort::UpdatedAt => "updated_at",
            InvoiceSort::TotalAmount => "total_amount",
            InvoiceSort::OrgInvoiceNumber => "org_invoice_number",
            InvoiceSort::ScheduledOn => "scheduled_on",
            InvoiceSort::Status => "status",
        };
        let mut page = self.page(
            concat!("SELECT ", invoice_cols!()),
            &sql,
            params,
            Paging {
                order,
                dir: q.direction,
                page: q.page,
                limit: q.limit,
            },
            invoice_row,
        )?;
        for inv in page.items.iter_mut() {
            self.items_of(inv)?;
        }
        Ok(page)
    }

    fn consumer_has_invoices_in(&mut self, branch: BranchId, consumer: ConsumerId, statuses: &[InvoiceStatus]) -> StoreResult<bool> {
        let mut sql = String::from("SELECT COUNT(*) FROM invoices WHERE branch_id = ?1 AND consumer_id = ?2");
        let mut params = vec![u(branch), u(consumer)];
        push_in(&mut sql, &mut params, "status", statuses.iter().map(|x| s(x.as_str())).collect());
        Ok(self.count(&sql, params)? > 0)
    }
}

impl billing_core::payment::PaymentTx for SqliteTx<'_> {
    fn insert_payment(&mut self, p: &Payment) -> StoreResult<()> {
        self.exec(
            concat!(
                "INSERT INTO payments (",
                payment_cols!(),
                ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)"
            ),
            payment_params(p),
        )?;
        Ok(())
    }

    fn payment(&mut self, branch: BranchId, id: PaymentId) -> StoreResult<Option<Payment>> {
        self.one(
            concat!("SELECT ", payment_cols!(), " FROM payments WHERE id = ?1 AND branch_id = ?2"),
            vec![u(id), u(branch)],
            payment_row,
        )
    }

    fn update_payment(&mut self, p: &Payment) -> StoreResult<()> {
        let n = self.exec(
            "UPDATE payments SET number = ?5, amount = ?6, currency = ?7, payment_type = ?8, method = ?9, status = ?10, scheduled_on = ?11,
               payed_at = ?12, refunded_at = ?13, refund_reason = ?14, refund_note = ?15, note = ?16, transaction_id = ?17,
               latest_pgw_message = ?18, created_at = ?19, updated_at = ?20
             WHERE id = ?1 AND org_id = ?2 AND branch_id = ?3 AND invoice_id = ?4",
            payment_params(p),
        )?;
        if n == 0 {
            return Err(not_found("payment"));
        }
        Ok(())
    }

    fn delete_payment(&mut self, id: PaymentId) -> StoreResult<()> {
        self.exec("DELETE FROM payments WHERE id = ?1", vec![u(id)])?;
        Ok(())
    }

    fn invoice_payments(&mut self, invoice: InvoiceId) -> StoreResult<Vec<Payment>> {
        self.all(
            concat!("SELECT ", payment_cols!(), " FROM payments WHERE invoice_id = ?1 ORDER BY number, id"),
            vec![u(invoice)],
            payment_row,
        )
    }

    fn list_payments(&mut self, branch: BranchId, q: &ListQuery<PaymentSort>, f: &PaymentFilter) -> StoreResult<Page<Payment>> {
        let mut sql = String::from("FROM payments WHERE branch_id = ?1");
        let mut params = vec![u(branch)];
        if let Some(term) = &q.search {
            let n = params.len() + 1;
            sql.push_str(&format!(
                " AND (contains_folded(note, ?{n}) OR contains_folded(refund_note, ?{n}) OR EXISTS (SELECT 1 FROM invoices v WHERE v.id = payments.invoice_id AND contains_folded(v.description, ?{n})))"
            ));
            params.push(s(term.to_lowercase()));
        }
        if !f.invoice_ids.is_empty() {
            push_in(&mut sql, &mut params, "invoice_id", f.invoice_ids.iter().map(|x| u(*x)).collect());
        }
        if !f.statuses.is_empty() {
            push_in(&mut sql, &mut params, "status", f.statuses.iter().map(|x| s(x.as_str())).collect());
        }
        if let Some(x) = &f.from_date {
            push_cmp(&mut sql, &mut params, "created_at >=", t(x));
        }
        if let Some(x) = &f.to_date {
            push_cmp(&mut sql, &mut params, "created_at <=", t(x));
        }
        let order = match q.sort {
            PaymentSort::CreatedAt => "created_at",
            PaymentSort::Amount => "amount",
            PaymentSort::ScheduledOn => "scheduled_on",
            PaymentSort::PayedAt => "payed_at",
        };
        self.page(
            concat!("SELECT ", payment_cols!()),
            &sql,
            params,
            Paging {
                order,
                dir: q.direction,
                page: q.page,
                limit: q.limit,
            },
            payment_row,
        )
    }

    fn insert_card(&mut self, c: &TokenizedCard) -> StoreResult<()> {
        self.exec(
            concat!(
                "INSERT INTO tokenized_cards (",
                card_cols!(),
                ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
            ),
            vec![
                u(c.id),
                u(c.org_id),
                u(c.consumer_id),
                s(&c.network),
                s(&c.last_four),
                i(i64::from(c.expiry_month)),
                i(i64::from(c.expiry_year)),
                s(&c.gateway_token),
                b(c.is_active),
                b(c.consent),
                t(&c.created_at),
            ],
        )?;
        Ok(())
    }

    fn latest_active_card(&mut self, consumer: ConsumerId) -> StoreResult<Option<TokenizedCard>> {
        self.one(
            concat!(
                "SELECT ",
                card_cols!(),
                " FROM tokenized_cards WHERE consumer_id = ?1 AND is_active = 1 ORDER BY created_at DESC, id DESC LIMIT 1"
            ),
            vec![u(consumer)],
            card_row,
        )
    }
}
