//! The sandbox test clock: it moves forward by seconds or to a date, never back, only for
//! sandbox organizations, and the organization's time (timestamps it writes) follows it.

use super::consumers::create as create_consumer;
use super::{expect_code, expect_invalid, start, ts, Harness, World};
use crate::error::Code;
use crate::sandbox::Advance;
use crate::store::Store;
use chrono::Duration;
use serde_json::json;

fn offset<S: Store>(w: &World<S>, org: crate::ids::OrgId) -> i64 {
    w.read(|tx| tx.org(org)).expect("org").clock_offset_us
}

pub fn advance_by_seconds<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    assert_eq!(w.billing.sandbox().clock(&w.admin).unwrap(), start());
    let t = w.billing.sandbox().advance(&w.admin, Advance::By(Duration::seconds(3600))).unwrap();
    assert_eq!(t, start() + Duration::hours(1));
    assert_eq!(offset(&w, org), 3_600_000_000);
    assert_eq!(w.billing.sandbox().clock(&w.fresh_admin()).unwrap(), t);

    // The offset stays while server time moves on.
    w.tick(10);
    let now = start() + Duration::seconds(3610);
    assert_eq!(w.billing.sandbox().clock(&w.fresh_admin()).unwrap(), now);
    assert_eq!(w.billing.engine().now(&w.fresh_admin()), now);

    assert_eq!(w.billing.sandbox().advance(&w.fresh_admin(), Advance::By(Duration::zero())).unwrap(), now);
    assert_eq!(offset(&w, org), 3_600_000_000);
    // A scope authenticated before the last advance still advances from the stored clock.
    let by = Advance::parse(&json!({"seconds": 90})).unwrap();
    assert_eq!(w.billing.sandbox().advance(&w.admin, by).unwrap(), now + Duration::seconds(90));
    assert_eq!(offset(&w, org), 3_690_000_000);
    assert_eq!(w.billing.sandbox().clock(&w.fresh_admin()).unwrap(), now + Duration::seconds(90));
}

pub fn advance_to_a_date<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let target = ts("2026-03-01T00:00:00.5Z");
    assert_eq!(w.billing.sandbox().advance(&w.admin, Advance::To(target)).unwrap(), target);
    assert_eq!(offset(&w, org), (target - start()).num_microseconds().unwrap());
    assert_eq!(w.billing.sandbox().clock(&w.fresh_admin()).unwrap(), target);
    w.tick(1);
    assert_eq!(w.billing.sandbox().clock(&w.fresh_admin()).unwrap(), target + Duration::seconds(1));
    let to = Advance::parse(&json!({"to": "2026-04-01T03:00:00.000001+03:00"})).unwrap();
    let t = w.billing.sandbox().advance(&w.fresh_admin(), to).unwrap();
    assert_eq!(t, ts("2026-04-01T00:00:00.000001Z"));
    assert_eq!(w.billing.sandbox().clock(&w.fresh_admin()).unwrap(), t);
    assert_eq!(w.now(), start() + Duration::seconds(1), "the server clock itself does not move");
}

pub fn clock_never_goes_back<H: Harness>() {
    let w = World::new(H::store());
    let org = w.boot.org.id;
    let day = start() + Duration::days(1);
    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::days(1))).unwrap();
    let before = w.read(|tx| tx.org(org)).unwrap();
    expect_invalid(w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(start() + Duration::hours(1))), "to");
    expect_invalid(
        w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(day - Duration::microseconds(1))),
        "to",
    );
    expect_invalid(w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(start())), "to");
    assert_eq!(w.read(|tx| tx.org(org)).unwrap(), before, "refusals change nothing");
    assert_eq!(w.billing.sandbox().clock(&w.fresh_admin()).unwrap(), day);
    // To the current time exactly is not backwards.
    assert_eq!(w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(day)).unwrap(), day);
    assert_eq!(w.read(|tx| tx.org(org)).unwrap(), before);
    // Server time moving on makes an earlier target past too.
    w.tick(7200);
    expect_invalid(w.billing.sandbox().advance(&w.fresh_admin(), Advance::To(day + Duration::hours(1))), "to");
    assert_eq!(w.read(|tx| tx.org(org)).unwrap(), before);

    expect_invalid(Advance::parse(&json!({"seconds": -1})), "seconds");
    expect_invalid(Advance::parse(&json!({})), "seconds");
    expect_invalid(Advance::parse(&json!({"seconds": 1, "to": "2027-01-01T00:00:00Z"})), "to");
    expect_invalid(Advance::parse(&json!({"to": "tomorrow"})), "to");
}

pub fn live_organization_has_no_test_clock<H: Harness>() {
    let w = World::new(H::store());
    let live = w.other_org("Live Org", true);
    assert!(!live.org.sandbox);
    let s = w.auth(&World::<H::S>::key_of(&live), None);
    assert!(!s.org.sandbox);
    expect_code(w.billing.sandbox().clock(&s), Code::SANDBOX_ONLY);
    expect_code(w.billing.sandbox().advance(&s, Advance::By(Duration::seconds(60))), Code::SANDBOX_ONLY);
    expect_code(w.billing.sandbox().advance(&s, Advance::To(start() + Duration::days(30))), Code::SANDBOX_ONLY);
    assert_eq!(w.read(|tx| tx.org(live.org.id)), Some(live.org.clone()), "nothing changed");
    assert_eq!(offset(&w, w.boot.org.id), 0);
    assert_eq!(w.billing.engine().now(&s), w.now());
}

pub fn org_time_follows_the_test_clock<H: Harness>() {
    let w = World::new(H::store());
    let other_sandbox = w.other_org("Other Sandbox", false);
    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::days(2))).unwrap();
    let s = w.fresh_admin();
    let t = start() + Duration::days(2);
    assert_eq!(w.billing.engine().now(&s), t);

    let c = create_consumer(&w, &s, json!({"name": "Later"}));
    assert_eq!(c.created_at, t);
    assert_eq!(w.billing.consumers().get(&s, c.id).unwrap().created_at, t);
    let p = super::catalog::create(&w, &s, json!({"name": "Later", "type": "ONE_OFF", "price": 1}));
    assert_eq!((p.created_at, p.prices[0].created_at), (t, t));
    let cp = w
        .billing
        .coupons()
        .create(
            &s,
            crate::coupon::CouponFields::parse(&json!({"name": "Later", "discount_value": 5, "is_percentage": true}), true).unwrap(),
        )
        .unwrap();
    assert_eq!(cp.created_at, t);
    let b = w.billing.branches().create(&s, "Later".into()).unwrap();
    assert_eq!(b.created_at, t);
    assert_eq!(w.billing.branches().get(&s, b.id).unwrap().created_at, t);

    w.tick(5);
    let s = w.fresh_admin();
    let u = w
        .billing
        .consumers()
        .update(&s, c.id, crate::consumer::ConsumerFields::parse(&json!({"alias": "L"}), false).unwrap())
        .unwrap();
    assert_eq!(u.updated_at, Some(t + Duration::seconds(5)));
    assert_eq!(w.billing.consumers().get(&s, c.id).unwrap().updated_at, Some(t + Duration::seconds(5)));

    // Other organizations keep server time.
    let os = w.auth(&World::<H::S>::key_of(&other_sandbox), None);
    assert_eq!(w.billing.engine().now(&os), w.now());
    assert_eq!(create_consumer(&w, &os, json!({"name": "Now"})).created_at, w.now());
}

/// The clock is the whole organization's: branch admins (branch-scoped keys) and branch users may
/// read it but not move it, and a refused advance moves nothing.
pub fn only_organization_admins_advance_the_clock<H: Harness>() {
    let w = World::new(H::store());
    let before = w.billing.sandbox().clock(&w.admin).unwrap();
    let (_, key) = w.scoped_key(&[w.boot.branch.id]);
    let branch_admin = w.auth(&key, None);
    let user = w.user(crate::org::Role::BranchUser, &[w.boot.branch.id]);
    let branch_user = w.auth(&w.bearer(&user), None);
    for scope in [&branch_admin, &branch_user] {
        assert_eq!(w.billing.sandbox().clock(scope).unwrap(), before);
        expect_code(w.billing.sandbox().advance(scope, Advance::By(Duration::days(1))), Code::PERMISSION_FORBIDDEN);
    }
    assert_eq!(w.billing.sandbox().clock(&w.fresh_admin()).unwrap(), before);
    assert_eq!(w.read(|tx| tx.org(w.boot.org.id)).unwrap().clock_advancing_to, None);
}
