//! Payments and saved cards: `billing_model::payment::PaymentTx`.

use crate::sql::*;
use billing_model::clock::Timestamp;
use billing_model::ids::{BranchId, ConsumerId, InvoiceId, PaymentId};
use billing_model::list::{ListQuery, Page};
use billing_model::money::Money;
use billing_model::payment::{Payment, PaymentFilter, PaymentMethod, PaymentSort, PaymentStatus, PaymentTx, PaymentType, RefundReason, TokenizedCard};
use billing_model::store::StoreResult;

table! {
    pub Payments in "payments" for Payment |p, r, at| {
        id: u(p.id) => get_id(r, at)?,
        org_id: u(p.org_id) => get_id(r, at)?,
        branch_id: u(p.branch_id) => get_id(r, at)?,
        invoice_id: u(p.invoice_id) => get_id(r, at)?,
        number: i(i64::from(p.number)) => get_count(r, at)?,
        amount: m(&p.amount)? => r.get::<_, i64>(at)?,
        currency: s(p.amount.currency().code()) => get_currency(r, at)?,
        payment_type: s(p.payment_type.as_str()) => get_parsed(r, at, PaymentType::parse)?,
        method: s_opt(p.method.map(|x| x.as_str())) => get_parsed_opt(r, at, PaymentMethod::parse)?,
        status: s(p.status.as_str()) => get_parsed(r, at, PaymentStatus::parse)?,
        scheduled_on: t(&p.scheduled_on) => get_ts(r, at)?,
        payed_at: t_opt(&p.payed_at) => get_ts_opt(r, at)?,
        refunded_at: t_opt(&p.refunded_at) => get_ts_opt(r, at)?,
        refund_reason: s_opt(p.refund_reason.map(|x| x.as_str())) => get_parsed_opt(r, at, RefundReason::parse)?,
        refund_note: s_opt(p.refund_note.as_deref()) => r.get(at)?,
        note: s_opt(p.note.as_deref()) => r.get(at)?,
        transaction_id: u_opt(p.transaction_id) => r.get(at)?,
        latest_pgw_message: s_opt(p.latest_pgw_message.as_deref()) => r.get(at)?,
        created_at: t(&p.created_at) => get_ts(r, at)?,
        updated_at: t_opt(&p.updated_at) => get_ts_opt(r, at)?,
    } => Payment {
        id, org_id, branch_id, invoice_id, number, amount: Money::from_stored(amount, currency), payment_type, method, status,
        scheduled_on, payed_at, refunded_at, refund_reason, refund_note, note, transaction_id, latest_pgw_message, created_at,
        updated_at,
    }
}

table! {
    pub Cards in "tokenized_cards" for TokenizedCard |c, r, at| {
        id: u(c.id) => r.get(at)?,
        org_id: u(c.org_id) => get_id(r, at)?,
        consumer_id: u(c.consumer_id) => get_id(r, at)?,
        network: s(&c.network) => r.get(at)?,
        last_four: s(&c.last_four) => r.get(at)?,
        expiry_month: i(i64::from(c.expiry_month)) => get_count(r, at)?,
        expiry_year: i(i64::from(c.expiry_year)) => get_count(r, at)?,
        gateway_token: s(&c.gateway_token) => r.get(at)?,
        is_active: b(c.is_active) => r.get(at)?,
        consent: b(c.consent) => r.get(at)?,
        created_at: t(&c.created_at) => get_ts(r, at)?,
    } => TokenizedCard { id, org_id, consumer_id, network, last_four, expiry_month, expiry_year, gateway_token, is_active, consent, created_at }
}

impl PaymentTx for SqliteTx<'_> {
    fn insert_payment(&mut self, p: &Payment) -> StoreResult<()> {
        self.exec(&Payments::sql().insert, Payments::params(p)?).map(drop)
    }

    fn payment(&mut self, branch: BranchId, id: PaymentId) -> StoreResult<Option<Payment>> {
        self.one(
            sql!("SELECT {} FROM payments WHERE id = ?1 AND branch_id = ?2", Payments::sql().select),
            vec![u(id), u(branch)],
            Payments::row,
        )
    }

    fn update_payment(&mut self, p: &Payment) -> StoreResult<()> {
        self.update_one(&Payments::sql().update, Payments::params(p)?, "payment")
    }

    fn delete_payment(&mut self, id: PaymentId) -> StoreResult<()> {
        self.exec("DELETE FROM payments WHERE id = ?1", vec![u(id)]).map(drop)
    }

    fn invoice_payments(&mut self, invoice: InvoiceId) -> StoreResult<Vec<Payment>> {
        self.all(
            sql!("SELECT {} FROM payments WHERE invoice_id = ?1 ORDER BY number, id", Payments::sql().select),
            vec![u(invoice)],
            Payments::row,
        )
    }

    fn payments_of_invoices(&mut self, invoices: &[InvoiceId]) -> StoreResult<Vec<Payment>> {
        if invoices.is_empty() {
            return Ok(vec![]);
        }
        let mut w = Filter::new("FROM payments WHERE 1 = 1", vec![]);
        w.any("invoice_id", invoices.iter().map(|x| u(*x)).collect());
        let sql = format!("SELECT {} {} ORDER BY invoice_id, number, id", Payments::sql().select, w.sql);
        self.all(&sql, w.params, Payments::row)
    }

    fn list_payments(&mut self, branch: BranchId, q: &ListQuery<PaymentSort>, f: &PaymentFilter) -> StoreResult<Page<Payment>> {
        let mut w = Filter::new("FROM payments WHERE branch_id = ?1", vec![u(branch)]);
        if let Some(term) = &q.search {
            let n = w.next();
            w.sql.push_str(&format!(
                " AND (contains_folded(note, ?{n}) OR contains_folded(refund_note, ?{n}) OR EXISTS (SELECT 1 FROM invoices v WHERE v.id = payments.invoice_id AND contains_folded(v.description, ?{n})))"
            ));
            w.params.push(s(term.to_lowercase()));
        }
        if !f.invoice_ids.is_empty() {
            w.any("invoice_id", f.invoice_ids.iter().map(|x| u(*x)).collect());
        }
        if !f.statuses.is_empty() {
            w.any("status", f.statuses.iter().map(|x| s(x.as_str())).collect());
        }
        if let Some(x) = &f.from_date {
            w.cmp("created_at >=", t(x));
        }
        if let Some(x) = &f.to_date {
            w.cmp("created_at <=", t(x));
        }
        let order = match q.sort {
            PaymentSort::CreatedAt => "created_at",
            PaymentSort::Amount => "amount",
            PaymentSort::ScheduledOn => "scheduled_on",
            PaymentSort::PayedAt => "payed_at",
        };
        let paging = Paging {
            order,
            dir: q.direction,
            page: q.page,
            limit: q.limit,
        };
        self.page(sql!("SELECT {}", Payments::sql().select), &w, paging, Payments::row)
    }

    fn insert_card(&mut self, c: &TokenizedCard) -> StoreResult<()> {
        self.exec(&Cards::sql().insert, Cards::params(c)?).map(drop)
    }

    fn latest_active_card(&mut self, consumer: ConsumerId) -> StoreResult<Option<TokenizedCard>> {
        self.one(
            sql!(
                "SELECT {} FROM tokenized_cards WHERE consumer_id = ?1 AND is_active = 1 ORDER BY created_at DESC, id DESC LIMIT 1",
                Cards::sql().select
            ),
            vec![u(consumer)],
            Cards::row,
        )
    }

    fn record_failed_pay_attempt(&mut self, target: &str, client: &str, at: Timestamp, forget_before: Timestamp) -> StoreResult<()> {
        self.exec(
            "DELETE FROM pay_attempt_failures WHERE target = ?1 AND client = ?2 AND at < ?3",
            vec![s(target), s(client), t(&forget_before)],
        )?;
        self.exec(
            "INSERT INTO pay_attempt_failures (id, target, client, at) VALUES (?1, ?2, ?3, ?4)",
            vec![u(uuid::Uuid::now_v7()), s(target), s(client), t(&at)],
        )
        .map(drop)
    }

    fn count_failed_pay_attempts(&mut self, target: &str, client: &str, since: Timestamp) -> StoreResult<u64> {
        self.count(
            "SELECT COUNT(*) FROM pay_attempt_failures WHERE target = ?1 AND client = ?2 AND at >= ?3",
            vec![s(target), s(client), t(&since)],
        )
    }
}
