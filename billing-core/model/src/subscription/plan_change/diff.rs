//! The per-line diff of a plan change (PendingPlanChangeDiffEntry), pure.
//!
//! A plan is compared by what it bills, whatever the order or repetition of its lines: per
//! product, the quantity (summed over the product's lines) and the set of its lines' coupons;
//! the set of subscription-level coupons; the interval and interval count ([`Normalized`]). The
//! diff lists, in this order:
//!
//! - `INTERVAL_CHANGED` (`from_value`/`to_value` `"1 MONTH"`, `"3 MONTH"`, …);
//! - per product of the target, in its order: a product new to the plan paired with a product
//!   leaving it (the k-th new with the k-th leaving, in line order) is `PRODUCT_REPLACED`
//!   (`product_id` the new product, `from_value`/`to_value` the old and new product ids), and
//!   then compares with the product it replaces; a product new to the plan otherwise is
//!   `PRODUCT_ADDED` (`to_value` the quantity) followed by a `COUPON_ADDED` per coupon of its
//!   lines; a product in both plans gets `QUANTITY_INCREASED`/`QUANTITY_DECREASED`
//!   (`from_value`/`to_value` the quantities) and `COUPON_REMOVED`/`COUPON_ADDED` for its
//!   lines' coupons (`product_id` set, the coupon id in `from_value`/`to_value`);
//! - `PRODUCT_REMOVED` (`from_value` the quantity) for each product leaving the plan not paired;
//! - `COUPON_REMOVED` and `COUPON_ADDED` of subscription-level coupons (`product_id` null).
//!
//! A line whose product, quantity and coupons are unchanged has no entry, and two plans billing
//! the same thing have an empty diff. [`apply`] replays a diff on a plan (what the properties
//! check: it gives the target).

use crate::ids::{CouponId, ProductId};
use crate::product::RecurringInterval;
use crate::wire_enum;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

wire_enum!(DiffKind {
    ProductAdded = "PRODUCT_ADDED",
    ProductRemoved = "PRODUCT_REMOVED",
    ProductReplaced = "PRODUCT_REPLACED",
    QuantityDecreased = "QUANTITY_DECREASED",
    QuantityIncreased = "QUANTITY_INCREASED",
    CouponAdded = "COUPON_ADDED",
    CouponRemoved = "COUPON_REMOVED",
    IntervalChanged = "INTERVAL_CHANGED",
});

/// One line of a plan, as the diff sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanLine {
    pub product_id: ProductId,
    pub quantity: u32,
    pub coupons: Vec<CouponId>,
}

/// A plan as the diff sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanShape {
    pub lines: Vec<PlanLine>,
    pub coupons: Vec<CouponId>,
    pub interval: RecurringInterval,
    pub interval_count: u32,
}

/// What a plan bills, whatever the order and repetition of its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalized {
    /// Per product: the quantity over its lines and the coupons of its lines.
    pub lines: BTreeMap<ProductId, (u64, BTreeSet<CouponId>)>,
    pub coupons: BTreeSet<CouponId>,
    pub interval: (RecurringInterval, u32),
}

/// PendingPlanChangeDiffEntry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffEntry {
    pub kind: DiffKind,
    pub label: String,
    pub product_id: Option<ProductId>,
    pub from_value: Option<String>,
    pub to_value: Option<String>,
}

impl DiffEntry {
    pub fn to_json(&self) -> Value {
        json!({
            "kind": self.kind,
            "label": self.label,
            "product_id": self.product_id,
            "from_value": self.from_value,
            "to_value": self.to_value,
        })
    }

    pub fn from_json(v: &Value) -> Option<Self> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(DiffEntry {
            kind: DiffKind::parse(v.get("kind")?.as_str()?)?,
            label: s("label")?,
            product_id: s("product_id").map(|p| p.parse()).transpose().ok()?,
            from_value: s("from_value"),
            to_value: s("to_value"),
        })
    }
}

/// The names shown in labels (a missing name shows as the id).
#[derive(Debug, Clone, Default)]
pub struct Names {
    pub products: BTreeMap<ProductId, String>,
    pub coupons: BTreeMap<CouponId, String>,
}

impl Names {
    fn product(&self, p: ProductId) -> String {
        self.products.get(&p).cloned().unwrap_or_else(|| p.to_string())
    }
    fn coupon(&self, c: CouponId) -> String {
        self.coupons.get(&c).cloned().unwrap_or_else(|| c.to_string())
    }
}

/// `"1 MONTH"`: how an interval shows in INTERVAL_CHANGED.
pub fn interval_text(interval: RecurringInterval, count: u32) -> String {
    format!("{count} {interval}")
}

fn parse_interval(s: &str) -> Option<(RecurringInterval, u32)> {
    let (n, i) = s.split_once(' ')?;
    Some((RecurringInterval::parse(i)?, n.parse().ok()?))
}

/// The products of a plan's lines, each once, in line order.
fn products(p: &PlanShape) -> Vec<ProductId> {
    let mut out: Vec<ProductId> = Vec::with_capacity(p.lines.len());
    for l in &p.lines {
        if !out.contains(&l.product_id) {
            out.push(l.product_id);
        }
    }
    out
}

/// The coupons of a product's lines, each once, in line order.
fn line_coupons(p: &PlanShape, product: ProductId) -> Vec<CouponId> {
    let mut out = vec![];
    for c in p.lines.iter().filter(|l| l.product_id == product).flat_map(|l| &l.coupons) {
        if !out.contains(c) {
            out.push(*c);
        }
    }
    out
}

fn unique(v: &[CouponId]) -> Vec<CouponId> {
    let mut out = vec![];
    for c in v {
        if !out.contains(c) {
            out.push(*c);
        }
    }
    out
}

pub fn normalize(p: &PlanShape) -> Normalized {
    let mut lines: BTreeMap<ProductId, (u64, BTreeSet<CouponId>)> = BTreeMap::new();
    for l in &p.lines {
        let e = lines.entry(l.product_id).or_default();
        e.0 += u64::from(l.quantity);
        e.1.extend(l.coupons.iter().copied());
    }
    Normalized {
        lines,
        coupons: p.coupons.iter().copied().collect(),
        interval: (p.interval, p.interval_count.max(1)),
    }
}

struct Out<'a> {
    names: &'a Names,
    entries: Vec<DiffEntry>,
}

impl Out<'_> {
    fn push(&mut self, kind: DiffKind, product: Option<ProductId>, from: Option<String>, to: Option<String>, label: String) {
        self.entries.push(DiffEntry {
            kind,
            label,
            product_id: product,
            from_value: from,
            to_value: to,
        });
    }

    /// Quantity and coupon changes of `product`'s lines from `(cq, cc)` to `(tq, tc)`.
    fn line(&mut self, product: ProductId, (cq, cc): (u64, &[CouponId]), (tq, tc): (u64, &[CouponId])) {
        let name = self.names.product(product);
        if tq != cq {
            let kind = if tq > cq { DiffKind::QuantityIncreased } else { DiffKind::QuantityDecreased };
            let label = format!("{name}: quantity {cq} → {tq}");
            self.push(kind, Some(product), Some(cq.to_string()), Some(tq.to_string()), label);
        }
        for c in cc.iter().filter(|c| !tc.contains(c)) {
            let label = format!("Coupon {} removed from {name}", self.names.coupon(*c));
            self.push(DiffKind::CouponRemoved, Some(product), Some(c.to_string()), None, label);
        }
        for c in tc.iter().filter(|c| !cc.contains(c)) {
            let label = format!("Coupon {} added to {name}", self.names.coupon(*c));
            self.push(DiffKind::CouponAdded, Some(product), None, Some(c.to_string()), label);
        }
    }
}

/// The diff from `current` to `target` (see the module's documentation), labelled with
/// `names`.
pub fn diff(current: &PlanShape, target: &PlanShape, names: &Names) -> Vec<DiffEntry> {
    let cur = normalize(current);
    let tgt = normalize(target);
    let mut out = Out { names, entries: vec![] };
    if cur.interval != tgt.interval {
        let (from, to) = (interval_text(cur.interval.0, cur.interval.1), interval_text(tgt.interval.0, tgt.interval.1));
        let label = format!("Billing interval: every {from} → every {to}");
        out.push(DiffKind::IntervalChanged, None, Some(from), Some(to), label);
    }
    let removed: Vec<ProductId> = products(current).into_iter().filter(|p| !tgt.lines.contains_key(p)).collect();
    let added: Vec<ProductId> = products(target).into_iter().filter(|p| !cur.lines.contains_key(p)).collect();
    let replaces: BTreeMap<ProductId, ProductId> = added.iter().copied().zip(removed.iter().copied()).collect();
    for p in products(target) {
        let tq = tgt.lines[&p].0;
        let tc = line_coupons(target, p);
        if let Some((cq, _)) = cur.lines.get(&p) {
            out.line(p, (*cq, &line_coupons(current, p)), (tq, &tc));
        } else if let Some(old) = replaces.get(&p) {
            let label = format!("{} replaced by {}", names.product(*old), names.product(p));
            out.push(DiffKind::ProductReplaced, Some(p), Some(old.to_string()), Some(p.to_string()), label);
            out.line(p, (cur.lines[old].0, &line_coupons(current, *old)), (tq, &tc));
        } else {
            let label = format!("{} added (quantity {tq})", names.product(p));
            out.push(DiffKind::ProductAdded, Some(p), None, Some(tq.to_string()), label);
            out.line(p, (tq, &[]), (tq, &tc));
        }
    }
    for p in removed.iter().skip(replaces.len()) {
        let cq = cur.lines[p].0;
        let label = format!("{} removed (quantity {cq})", names.product(*p));
        out.push(DiffKind::ProductRemoved, Some(*p), Some(cq.to_string()), None, label);
    }
    let (cc, tc) = (unique(&current.coupons), unique(&target.coupons));
    for c in cc.iter().filter(|c| !tgt.coupons.contains(c)) {
        let label = format!("Coupon {} removed", names.coupon(*c));
        out.push(DiffKind::CouponRemoved, None, Some(c.to_string()), None, label);
    }
    for c in tc.iter().filter(|c| !cur.coupons.contains(c)) {
        let label = format!("Coupon {} added", names.coupon(*c));
        out.push(DiffKind::CouponAdded, None, None, Some(c.to_string()), label);
    }
    out.entries
}

/// Replays `diff` on `current`: the plan it describes, or `None` when an entry does not fit
/// (names a line that is not there, or a value that does not parse).
pub fn apply(current: &PlanShape, diff: &[DiffEntry]) -> Option<Normalized> {
    let mut n = normalize(current);
    for e in diff {
        let from = e.from_value.as_deref();
        let to = e.to_value.as_deref();
        match e.kind {
            DiffKind::IntervalChanged => {
                if parse_interval(from?)? != n.interval {
                    return None;
                }
                n.interval = parse_interval(to?)?;
            }
            DiffKind::ProductAdded => {
                let q: u64 = to?.parse().ok()?;
                if n.lines.insert(e.product_id?, (q, BTreeSet::new())).is_some() {
                    return None;
                }
            }
            DiffKind::ProductRemoved => {
                let (q, _) = n.lines.remove(&e.product_id?)?;
                if q.to_string() != from? {
                    return None;
                }
            }
            DiffKind::ProductReplaced => {
                let old: ProductId = from?.parse().ok()?;
                let new: ProductId = to?.parse().ok()?;
                if Some(new) != e.product_id || n.lines.contains_key(&new) {
                    return None;
                }
                let line = n.lines.remove(&old)?;
                n.lines.insert(new, line);
            }
            DiffKind::QuantityIncreased | DiffKind::QuantityDecreased => {
                let line = n.lines.get_mut(&e.product_id?)?;
                if line.0.to_string() != from? {
                    return None;
                }
                line.0 = to?.parse().ok()?;
            }
            DiffKind::CouponAdded | DiffKind::CouponRemoved => {
                let added = e.kind == DiffKind::CouponAdded;
                let c: CouponId = if added { to? } else { from? }.parse().ok()?;
                let set = match e.product_id {
                    Some(p) => &mut n.lines.get_mut(&p)?.1,
                    None => &mut n.coupons,
                };
                let changed = if added { set.insert(c) } else { set.remove(&c) };
                if !changed {
                    return None;
                }
            }
        }
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use uuid::Uuid;
    use RecurringInterval::*;

    fn pid(k: u8) -> ProductId {
        ProductId(Uuid::from_u128(0x1000 + u128::from(k)))
    }
    fn cid(k: u8) -> CouponId {
        CouponId(Uuid::from_u128(0x2000 + u128::from(k)))
    }
    fn line(p: u8, q: u32, cs: &[u8]) -> PlanLine {
        PlanLine {
            product_id: pid(p),
            quantity: q,
            coupons: cs.iter().map(|c| cid(*c)).collect(),
        }
    }
    fn plan(lines: Vec<PlanLine>, coupons: &[u8], interval: RecurringInterval, count: u32) -> PlanShape {
        PlanShape {
            lines,
            coupons: coupons.iter().map(|c| cid(*c)).collect(),
            interval,
            interval_count: count,
        }
    }
    fn kinds(d: &[DiffEntry]) -> Vec<DiffKind> {
        d.iter().map(|e| e.kind).collect()
    }

    #[test]
    fn each_kind_with_its_values_and_labels() {
        let mut names = Names::default();
        names.products.insert(pid(1), "Gym".into());
        names.products.insert(pid(2), "Pool".into());
        names.products.insert(pid(3), "Spa".into());
        names.coupons.insert(cid(1), "TEN".into());
        let current = plan(vec![line(1, 1, &[]), line(2, 2, &[1])], &[1], Month, 1);
        let target = plan(vec![line(1, 3, &[1]), line(3, 1, &[]), line(4, 5, &[2])], &[2], Quarter, 1);
        let d = diff(&current, &target, &names);
        assert_eq!(
            kinds(&d),
            [
                DiffKind::IntervalChanged,
                DiffKind::QuantityIncreased,
                DiffKind::CouponAdded,
                DiffKind::ProductReplaced,
                DiffKind::QuantityDecreased,
                DiffKind::CouponRemoved,
                DiffKind::ProductAdded,
                DiffKind::CouponAdded,
                DiffKind::CouponRemoved,
                DiffKind::CouponAdded,
            ]
        );
        assert_eq!(d[0].label, "Billing interval: every 1 MONTH → every 1 QUARTER");
        assert_eq!((d[0].from_value.as_deref(), d[0].to_value.as_deref()), (Some("1 MONTH"), Some("1 QUARTER")));
        assert_eq!(d[1].label, "Gym: quantity 1 → 3");
        assert_eq!(d[2].label, "Coupon TEN added to Gym");
        assert_eq!(d[3].label, "Pool replaced by Spa");
        assert_eq!(d[3].product_id, Some(pid(3)));
        assert_eq!(d[3].from_value, Some(pid(2).to_string()));
        assert_eq!(d[4].label, "Spa: quantity 2 → 1");
        assert_eq!(d[5].label, "Coupon TEN removed from Spa");
        assert_eq!(d[6].to_value.as_deref(), Some("5"));
        assert_eq!(d[8].label, "Coupon TEN removed");
        assert_eq!(d[8].product_id, None);
        assert_eq!(apply(&current, &d), Some(normalize(&target)));
        // A removal without a product to pair with.
        let d = diff(&current, &plan(vec![line(1, 1, &[])], &[1], Month, 1), &names);
        assert_eq!(kinds(&d), [DiffKind::ProductRemoved]);
        assert_eq!((d[0].label.as_str(), d[0].from_value.as_deref()), ("Pool removed (quantity 2)", Some("2")));
        // Entries survive their JSON form.
        for e in &d {
            assert_eq!(DiffEntry::from_json(&e.to_json()).as_ref(), Some(e));
        }
    }

    #[test]
    fn order_and_repetition_do_not_count() {
        let a = plan(vec![line(1, 1, &[1]), line(2, 2, &[])], &[1, 2], Month, 1);
        let b = plan(vec![line(2, 1, &[]), line(1, 1, &[1]), line(2, 1, &[])], &[2, 1, 2], Month, 1);
        assert!(diff(&a, &b, &Names::default()).is_empty());
        assert_eq!(normalize(&a), normalize(&b));
    }

    #[test]
    fn apply_refuses_diffs_that_do_not_fit() {
        let a = plan(vec![line(1, 1, &[])], &[], Month, 1);
        let b = plan(vec![line(1, 2, &[])], &[], Month, 1);
        let d = diff(&a, &b, &Names::default());
        assert_eq!(apply(&b, &d), None, "the quantity it starts from is not b's");
        let d = diff(&a, &plan(vec![line(2, 1, &[])], &[], Month, 1), &Names::default());
        assert_eq!(apply(&b, &d).map(|n| n.lines.len()), Some(1));
        assert_eq!(apply(&plan(vec![], &[], Month, 1), &d), None);
    }

    fn interval() -> impl Strategy<Value = (RecurringInterval, u32)> {
        (prop_oneof![Just(Week), Just(Month), Just(Quarter), Just(Semester), Just(Year)], 1u32..4)
    }

    /// Plans over a small pool of products and coupons, so that plans share lines often;
    /// `dups` allows a product on several lines.
    fn shape(dups: bool) -> impl Strategy<Value = PlanShape> {
        let l = (0u8..6, 1u32..5, proptest::collection::vec(0u8..4, 0..3)).prop_map(|(p, q, cs)| line(p, q, &cs));
        (proptest::collection::vec(l, 0..6), proptest::collection::vec(0u8..4, 0..3), interval()).prop_map(move |(mut lines, cs, (i, n))| {
            if !dups {
                let mut seen = vec![];
                lines.retain(|l| {
                    let fresh = !seen.contains(&l.product_id);
                    seen.push(l.product_id);
                    fresh
                });
            }
            plan(lines, &cs, i, n)
        })
    }

    fn touched(d: &[DiffEntry]) -> BTreeSet<ProductId> {
        let mut out = BTreeSet::new();
        for e in d {
            out.extend(e.product_id);
            if e.kind == DiffKind::ProductReplaced {
                out.extend(e.from_value.as_deref().and_then(|v| v.parse::<ProductId>().ok()));
            }
        }
        out
    }

    proptest! {
        /// Applying the diff to the current plan gives the target.
        #[test]
        fn applying_the_diff_gives_the_target(a in shape(true), b in shape(true)) {
            let d = diff(&a, &b, &Names::default());
            prop_assert_eq!(apply(&a, &d), Some(normalize(&b)));
        }

        /// A plan compared with itself (or with the same lines in another order) has no diff;
        /// a diff is empty exactly when both plans bill the same.
        #[test]
        fn a_plan_against_itself_is_empty(a in shape(true), b in shape(true)) {
            prop_assert!(diff(&a, &a, &Names::default()).is_empty());
            let mut r = a.clone();
            r.lines.reverse();
            r.coupons.reverse();
            prop_assert!(diff(&a, &r, &Names::default()).is_empty());
            prop_assert_eq!(diff(&a, &b, &Names::default()).is_empty(), normalize(&a) == normalize(&b));
        }

        /// No entry names a product whose line is unchanged (same quantity and coupons in both
        /// plans); every entry's kind fits the values it carries.
        #[test]
        fn unchanged_lines_have_no_entry(a in shape(false), b in shape(false)) {
            let d = diff(&a, &b, &Names::default());
            let (na, nb) = (normalize(&a), normalize(&b));
            for (p, line) in &na.lines {
                if nb.lines.get(p) == Some(line) {
                    prop_assert!(!touched(&d).contains(p), "{:?} is unchanged but in {:?}", p, d);
                }
            }
            for e in &d {
                match e.kind {
                    DiffKind::QuantityIncreased => prop_assert!(e.to_value.as_ref().unwrap().parse::<u64>().unwrap() > e.from_value.as_ref().unwrap().parse::<u64>().unwrap()),
                    DiffKind::QuantityDecreased => prop_assert!(e.to_value.as_ref().unwrap().parse::<u64>().unwrap() < e.from_value.as_ref().unwrap().parse::<u64>().unwrap()),
                    DiffKind::ProductAdded => prop_assert!(e.from_value.is_none() && !na.lines.contains_key(&e.product_id.unwrap())),
                    DiffKind::ProductRemoved => prop_assert!(e.to_value.is_none() && !nb.lines.contains_key(&e.product_id.unwrap())),
                    DiffKind::IntervalChanged => prop_assert!(na.interval != nb.interval),
                    _ => {}
                }
            }
        }
    }
}
