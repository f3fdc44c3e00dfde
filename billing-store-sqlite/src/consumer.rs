//! Consumers: `billing_model::consumer::ConsumerTx`. Search goes through the FTS5 trigram index
//! `consumers_search` (kept in step by triggers), or scans the branch for terms too short for
//! trigrams.

use crate::sql::*;
use billing_model::consumer::{CommunicationMethod, Consumer, ConsumerFilter, ConsumerSort, ConsumerTx, ConsumerType};
use billing_model::fields::{Email, Iban, Language, PhoneNumber};
use billing_model::ids::{BranchId, ConsumerId};
use billing_model::list::{ListQuery, Page};
use billing_model::store::StoreResult;

table! {
    pub Consumers in "consumers" for Consumer |c, r, at| {
        id: u(c.id) => get_id(r, at)?,
        org_id: u(c.org_id) => get_id(r, at)?,
        branch_id: u(c.branch_id) => get_id(r, at)?,
        name: s(&c.name) => r.get(at)?,
        phone_number: s_opt(c.phone_number.as_ref().map(|p| p.as_str())) => r.get::<_, Option<String>>(at)?.map(PhoneNumber::from_stored),
        email: s_opt(c.email.as_ref().map(|e| e.as_str())) => r.get::<_, Option<String>>(at)?.map(Email::from_stored),
        external_id: s_opt(c.external_id.as_deref()) => r.get(at)?,
        iban: s_opt(c.iban.as_ref().map(|i| i.as_str())) => r.get::<_, Option<String>>(at)?.map(Iban::from_stored),
        alias: s_opt(c.alias.as_deref()) => r.get(at)?,
        comment: s_opt(c.comment.as_deref()) => r.get(at)?,
        preferred_language: s(c.preferred_language.as_str()) => get_parsed(r, at, |l| Language::parse(l).ok())?,
        communication_methods: j(&c.communication_methods.iter().map(|m| m.as_str()).collect::<Vec<_>>()) => {
            let names: Vec<String> = get_json(r, at)?;
            names
                .iter()
                .map(|m| CommunicationMethod::parse(m).ok_or_else(|| bad(at, m.clone())))
                .collect::<rusqlite::Result<Vec<_>>>()?
        },
        consumer_type: s(c.consumer_type.as_str()) => get_parsed(r, at, ConsumerType::parse)?,
        address: c.address.as_ref().map(j).unwrap_or(rusqlite::types::Value::Null) => get_json_opt(r, at)?,
        vat_number: s_opt(c.vat_number.as_deref()) => r.get(at)?,
        commercial_registration: s_opt(c.commercial_registration.as_deref()) => r.get(at)?,
        external_metadata: j(&c.external_metadata) => get_json(r, at)?,
        is_deleted: b(c.is_deleted) => r.get(at)?,
        created_at: t(&c.created_at) => get_ts(r, at)?,
        updated_at: t_opt(&c.updated_at) => get_ts_opt(r, at)?,
    }
    writes { email_lower: s_opt(c.email.as_ref().map(|e| e.normalized())) }
    => Consumer {
        id, org_id, branch_id, name, phone_number, email, external_id, iban, alias, comment, preferred_language,
        communication_methods, consumer_type, address, vat_number, commercial_registration, external_metadata,
        is_deleted, created_at, updated_at,
    }
}

impl ConsumerTx for SqliteTx<'_> {
    fn insert_consumer(&mut self, c: &Consumer) -> StoreResult<()> {
        self.exec(&Consumers::sql().insert, Consumers::params(c)?).map(drop)
    }

    fn consumer(&mut self, branch: BranchId, consumer: ConsumerId) -> StoreResult<Option<Consumer>> {
        self.one(
            sql!("SELECT {} FROM consumers WHERE id = ?1 AND branch_id = ?2", Consumers::sql().select),
            vec![u(consumer), u(branch)],
            Consumers::row,
        )
    }

    fn consumers_by_ids(&mut self, branch: BranchId, ids: &[ConsumerId]) -> StoreResult<Vec<Consumer>> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let mut w = Filter::new("FROM consumers WHERE branch_id = ?1", vec![u(branch)]);
        w.any("id", ids.iter().map(|x| u(*x)).collect());
        let sql = format!("SELECT {} {}", Consumers::sql().select, w.sql);
        self.all(&sql, w.params, Consumers::row)
    }

    fn update_consumer(&mut self, c: &Consumer) -> StoreResult<()> {
        self.update_one(&Consumers::sql().update, Consumers::params(c)?, "consumer")
    }

    fn consumer_conflict(&mut self, branch: BranchId, phone: Option<&str>, email_lower: Option<&str>, except: ConsumerId) -> StoreResult<Option<Consumer>> {
        // Two lookups rather than `phone = ? OR email = ?`: each one is served by its partial
        // unique index, while the OR would scan the whole branch.
        if let Some(p) = phone {
            let hit = self.one(
                sql!(
                    "SELECT {} FROM consumers WHERE branch_id = ?1 AND phone_number = ?2 AND is_deleted = 0 AND id <> ?3 LIMIT 1",
                    Consumers::sql().select
                ),
                vec![u(branch), s(p), u(except)],
                Consumers::row,
            )?;
            if hit.is_some() {
                return Ok(hit);
            }
        }
        if let Some(e) = email_lower {
            return self.one(
                sql!(
                    "SELECT {} FROM consumers WHERE branch_id = ?1 AND email_lower = ?2 AND is_deleted = 0 AND id <> ?3 LIMIT 1",
                    Consumers::sql().select
                ),
                vec![u(branch), s(e), u(except)],
                Consumers::row,
            );
        }
        Ok(None)
    }

    fn list_consumers(&mut self, branch: BranchId, q: &ListQuery<ConsumerSort>, f: &ConsumerFilter) -> StoreResult<Page<Consumer>> {
        let mut w = Filter::new("FROM consumers WHERE branch_id = ?1 AND is_deleted = 0", vec![u(branch)]);
        if let Some(term) = &q.search {
            if term.chars().count() >= 3 {
                // Trigram phrase query on the search index: a case-insensitive substring of any
                // searched column; or the exact IBAN. `+branch_id` keeps the planner from walking
                // the whole branch by its index: the matching rows drive the query instead.
                w.sql = w.sql.replacen("WHERE branch_id = ?1", "WHERE +branch_id = ?1", 1);
                let n = w.next();
                w.sql.push_str(&format!(
                    " AND seq IN (SELECT rowid FROM consumers_search WHERE consumers_search MATCH ?{n} \
                     UNION SELECT seq FROM consumers WHERE branch_id = ?1 AND iban = ?{} AND is_deleted = 0)",
                    n + 1
                ));
                w.params.push(s(format!("\"{}\"", term.replace('"', "\"\""))));
                w.params.push(s(term.as_str()));
            } else {
                // Too short for trigrams: scan the branch.
                let iban = format!(" OR iban = ?{}", w.next() + 1);
                w.folded(&["name", "email", "phone_number", "alias", "external_id"], term, &iban);
                w.params.push(s(term.as_str()));
            }
        }
        if let Some(ext) = &f.external_id {
            w.cmp("external_id =", s(ext.as_str()));
        }
        w.metadata(&f.metadata);
        let order = match q.sort {
            ConsumerSort::Name => "name",
            ConsumerSort::CreatedAt => "created_at",
            ConsumerSort::Email => "email",
            ConsumerSort::PhoneNumber => "phone_number",
            ConsumerSort::ExternalId => "external_id",
        };
        let paging = Paging {
            order,
            dir: q.direction,
            page: q.page,
            limit: q.limit,
        };
        self.page(sql!("SELECT {}", Consumers::sql().select), &w, paging, Consumers::row)
    }
}
