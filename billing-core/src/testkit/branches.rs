//! Branch cases: visibility per role, get-or-create by name, renames, and deletion rules.

use super::tx::raw_user;
use super::{expect_code, start, Harness, World};
use crate::auth::Credential;
use crate::branch::Branch;
use crate::error::Code;
use crate::ids::{BranchId, OrgId};
use crate::org::{OrgSettings, Organization, Role};
use chrono::Duration;

pub fn bootstrap_creates_default_branch<H: Harness>() {
    let w = World::new(H::store());
    let branches = w.billing.branches().list(&w.admin).unwrap();
    assert_eq!(branches.len(), 1);
    assert_eq!(branches[0].id, w.boot.branch.id);
    assert_eq!(branches[0].user_count, 1);
    assert_eq!(branches[0].name, "Main");
    assert_eq!(branches[0].created_at, start());
}

pub fn list_visibility_per_role<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let c = w.new_branch("Charlie");
    assert_eq!(
        w.branch_names(&w.admin),
        vec!["Main", "Bravo", "Charlie"],
        "organization admin: all, oldest first"
    );
    let (_, key) = w.scoped_key(&[c.id]);
    assert_eq!(w.branch_names(&w.auth(&key, None)), vec!["Charlie"], "branch admin key: its branches");
    let bu = w.user(Role::BranchUser, &[b.id]);
    assert_eq!(w.branch_names(&w.auth(&w.bearer(&bu), None)), vec!["Bravo"], "branch user: its branches");
    let ba = w.user(Role::BranchAdmin, &[c.id, b.id]);
    assert_eq!(w.branch_names(&w.auth(&w.bearer(&ba), None)), vec!["Bravo", "Charlie"]);
    let oa = w.user(Role::OrganizationAdmin, &[]);
    assert_eq!(w.branch_names(&w.auth(&w.bearer(&oa), None)), vec!["Main", "Bravo", "Charlie"]);
    // Branches made later are visible to all-branch actors only.
    w.new_branch("Delta");
    assert_eq!(w.branch_names(&w.auth(&key, None)), vec!["Charlie"]);
    assert_eq!(w.branch_names(&w.admin).len(), 4);
}

pub fn create_existing_name_returns_it<H: Harness>() {
    let w = World::new(H::store());
    let north = w.new_branch("North");
    assert_eq!(north.name, "North");
    assert_eq!(north.created_at, w.now());
    assert_eq!(w.billing.branches().get(&w.admin, north.id).unwrap(), north);
    w.tick(5);
    let again = w.billing.branches().create(&w.admin, "NORTH".into()).unwrap();
    assert_eq!(again.id, north.id);
    assert_eq!(again.name, "North", "the existing branch is returned unchanged");
    assert_eq!(again.created_at, north.created_at);
    let main = w.billing.branches().create(&w.admin, "main".into()).unwrap();
    assert_eq!(main.id, w.boot.branch.id);
    assert_eq!(w.branch_names(&w.admin), vec!["Main", "North"]);

    // A deleted branch's name can be used again, by a new branch.
    w.billing.branches().delete(&w.admin, north.id).unwrap();
    let reborn = w.billing.branches().create(&w.admin, "north".into()).unwrap();
    assert_ne!(reborn.id, north.id);
    assert_eq!(w.branch_names(&w.admin), vec!["Main", "north"]);
}

pub fn rename_rules<H: Harness>() {
    let w = World::new(H::store());
    let north = w.new_branch("North");
    let south = w.new_branch("South");
    let e = expect_code(w.billing.branches().update(&w.admin, south.id, "north".into()), Code::RESOURCE_ALREADY_EXISTS);
    assert!(e.to_string().contains("north"), "names the value: {e}");
    assert_eq!(
        w.billing.branches().get(&w.admin, south.id).unwrap().name,
        "South",
        "refused rename changes nothing"
    );
    expect_code(w.billing.branches().update(&w.admin, south.id, "MAIN".into()), Code::RESOURCE_ALREADY_EXISTS);

    let same = w.billing.branches().update(&w.admin, south.id, "SOUTH".into()).unwrap();
    assert_eq!(
        (same.id, same.name.as_str()),
        (south.id, "SOUTH"),
        "renaming to its own name (any case) is fine"
    );
    let east = w.billing.branches().update(&w.admin, south.id, "East".into()).unwrap();
    assert_eq!(east.name, "East");
    assert_eq!(east.created_at, south.created_at);
    assert_eq!(w.billing.branches().get(&w.admin, south.id).unwrap().name, "East");
    assert_eq!(
        w.billing.branches().create(&w.admin, "east".into()).unwrap().id,
        south.id,
        "found by its new name"
    );
    // The old name is free now.
    let again = w.billing.branches().update(&w.admin, north.id, "South".into()).unwrap();
    assert_eq!(again.name, "South");
    expect_code(w.billing.branches().update(&w.admin, BranchId::new(), "Nowhere".into()), Code::NOT_FOUND);
    assert_eq!(w.branch_names(&w.admin), vec!["Main", "South", "East"]);
}

pub fn delete_last_branch_refused<H: Harness>() {
    let w = World::new(H::store());
    // An organization with one branch and no API key (so only the last-branch rule applies).
    let org = Organization {
        id: OrgId::new(),
        name: "Solo".into(),
        name_en: None,
        sandbox: true,
        settings: OrgSettings::default(),
        clock_offset_us: 0,
        clock_advancing_to: None,
        created_at: start(),
    };
    let only = Branch::new(org.id, "Only", start());
    let admin = raw_user(org.id, Role::OrganizationAdmin, vec![only.id], start());
    w.write(|tx| {
        tx.insert_org(&org)?;
        tx.insert_branch(&only)?;
        tx.insert_user(&admin)
    });
    let s = w.auth(&Credential::Bearer(w.billing.auth().issue_token(&admin, Duration::hours(1))), None);
    assert_eq!(s.branch.id, only.id);
    expect_code(w.billing.branches().delete(&s, only.id), Code::BRANCH_IN_USE);
    assert_eq!(w.billing.branches().list(&s).unwrap().len(), 1);
    assert!(w.read(|tx| tx.branch(org.id, only.id)).is_some());
    // With a second branch, the first can go.
    let second = w.billing.branches().create(&s, "Second".into()).unwrap();
    w.billing.branches().delete(&s, only.id).unwrap();
    let ids: Vec<BranchId> = w.billing.branches().list(&s).unwrap().into_iter().map(|b| b.id).collect();
    assert_eq!(ids, vec![second.id]);
    expect_code(w.billing.branches().delete(&s, second.id), Code::BRANCH_IN_USE);
}

pub fn delete_default_branch_of_key_refused<H: Harness>() {
    let w = World::new(H::store());
    let main = w.boot.branch.id;
    let b = w.new_branch("Bravo");
    let c = w.new_branch("Charlie");
    let d = w.new_branch("Delta");
    expect_code(w.billing.branches().delete(&w.admin, main), Code::BRANCH_IN_USE);
    let (_, key) = w.scoped_key(&[c.id, b.id]);
    expect_code(w.billing.branches().delete(&w.admin, c.id), Code::BRANCH_IN_USE);
    assert_eq!(w.branch_names(&w.admin), vec!["Main", "Bravo", "Charlie", "Delta"], "refusals change nothing");
    assert_eq!(w.auth(&key, None).branch.id, c.id);
    // A revoked key does not hold its default branch.
    w.insert_key(d.id, Some(w.now()));
    w.billing.branches().delete(&w.admin, d.id).unwrap();
    // A key's non-default branch can go.
    w.billing.branches().delete(&w.admin, b.id).unwrap();
    assert_eq!(w.branch_names(&w.admin), vec!["Main", "Charlie"]);
    expect_code(w.billing.auth().authenticate(&key, Some(b.id)), Code::PERMISSION_FORBIDDEN);
}

pub fn deleted_branch_disappears<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let user = w.user(Role::BranchUser, &[b.id]);
    w.billing.branches().delete(&w.admin, b.id).unwrap();
    assert_eq!(w.branch_names(&w.admin), vec!["Main"]);
    expect_code(w.billing.branches().get(&w.admin, b.id), Code::NOT_FOUND);
    expect_code(w.billing.branches().update(&w.admin, b.id, "Back".into()), Code::NOT_FOUND);
    expect_code(w.billing.branches().delete(&w.admin, b.id), Code::NOT_FOUND);
    expect_code(w.billing.auth().authenticate(&w.admin_key(), Some(b.id)), Code::PERMISSION_FORBIDDEN);
    assert!(w.read(|tx| tx.branch_by_name(w.boot.org.id, &Branch::name_key("bravo"))).is_none());
    expect_code(w.billing.auth().authenticate(&w.bearer(&user), None), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.branches().delete(&w.admin, BranchId::new()), Code::NOT_FOUND);
}

pub fn branch_user_cannot_change_branches<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let c = w.new_branch("Charlie");
    let user = w.user(Role::BranchUser, &[b.id, c.id]);
    let s = w.auth(&w.bearer(&user), None);
    expect_code(w.billing.branches().create(&s, "Mine".into()), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.branches().create(&s, "Bravo".into()), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.branches().update(&s, b.id, "Renamed".into()), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.branches().delete(&s, c.id), Code::PERMISSION_FORBIDDEN);
    assert_eq!(w.branch_names(&w.admin), vec!["Main", "Bravo", "Charlie"]);
}

pub fn branch_admin_cannot_create_or_delete<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let c = w.new_branch("Charlie");
    let (_, key) = w.scoped_key(&[b.id, c.id]);
    let ba = w.user(Role::BranchAdmin, &[b.id, c.id]);
    for s in [w.auth(&key, None), w.auth(&w.bearer(&ba), None)] {
        assert_eq!(s.actor.role, Role::BranchAdmin);
        expect_code(w.billing.branches().create(&s, "Mine".into()), Code::PERMISSION_FORBIDDEN);
        expect_code(w.billing.branches().delete(&s, c.id), Code::PERMISSION_FORBIDDEN);
        expect_code(w.billing.branches().delete(&s, w.boot.branch.id), Code::PERMISSION_FORBIDDEN);
    }
    assert_eq!(w.branch_names(&w.admin), vec!["Main", "Bravo", "Charlie"]);
    let s = w.auth(&w.bearer(&ba), None);
    assert_eq!(
        w.billing.branches().update(&s, b.id, "Bravo 2".into()).unwrap().name,
        "Bravo 2",
        "branch admins rename their branches"
    );
}

pub fn names_compare_case_insensitively_beyond_ascii<H: Harness>() {
    let w = World::new(H::store());
    let e = w.new_branch("Émile Branch");
    assert_eq!(w.billing.branches().create(&w.admin, "ÉMILE BRANCH".into()).unwrap().id, e.id);
    assert_eq!(w.billing.branches().create(&w.admin, "émile branch".into()).unwrap().id, e.id);
    let d = w.new_branch("Ďalší");
    expect_code(
        w.billing.branches().update(&w.admin, d.id, "émile BRANCH".into()),
        Code::RESOURCE_ALREADY_EXISTS,
    );
    assert_eq!(w.branch_names(&w.admin), vec!["Main", "Émile Branch", "Ďalší"]);
    assert_eq!(
        w.read(|tx| tx.branch_by_name(w.boot.org.id, &Branch::name_key(" ĎALŠÍ "))).map(|b| b.id),
        Some(d.id)
    );
}

/// A branch with money or messages still under way in it (an open invoice, a webhook delivery
/// not yet finished) is not deleted: BRANCH_IN_USE names what holds it, and nothing changes.
/// Once they are finished it may be, and its records stay readable by organization admins
/// (naming it in `x-branch-id`), by nobody else, and for nothing but reads.
pub fn branch_with_unfinished_business_is_kept_then_retired_readable<H: Harness>() {
    use super::invoices as inv;
    use super::webhooks::{event_in, record, FakeTransport};
    use crate::event::EventType;
    use crate::lane::Lane;
    use crate::webhook::EndpointFields;
    use serde_json::json;
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let s = w.in_branch(b.id);
    let c = inv::consumer(&w, &s, false);
    let p = inv::product(&w, &s, "10.00", json!({}));
    let open = inv::create(&w, &s, inv::invoice_body(c.id, &[(p.id, 1)], &[]));
    let refused = expect_code(w.billing.branches().delete(&w.admin, b.id), Code::BRANCH_IN_USE);
    assert!(refused.to_string().contains("1 open invoice"), "{refused}");
    assert_eq!(w.branch_names(&w.admin), vec!["Main", "Bravo"]);

    // A webhook delivery that is still being retried holds it too.
    w.billing.invoices().void(&s, open.id).unwrap();
    let t = FakeTransport::new(500);
    w.billing.engine().set_webhook_transport(t.clone());
    let hook = w
        .billing
        .webhooks()
        .create(&s, EndpointFields::parse(&json!({"url": "https://example.com/h"}), true).unwrap())
        .unwrap();
    record(&w, &event_in(&s, EventType::PaymentSucceeded, w.now()));
    w.billing.engine().run_due_work(None, 100).unwrap();
    let refused = expect_code(w.billing.branches().delete(&w.admin, b.id), Code::BRANCH_IN_USE);
    assert!(refused.to_string().contains("webhook"), "{refused}");
    w.billing.webhooks().delete(&s, hook.id).unwrap();
    w.billing.branches().delete(&w.admin, b.id).unwrap();

    // Retired: readable by organization admins who name it, for reads only.
    let admin = w.billing.auth().authenticate_for(&w.admin_key(), Some(b.id), Lane::Read).unwrap();
    assert_eq!(admin.branch.id, b.id);
    let (read, _) = w.billing.invoices().get(&admin, open.id).unwrap().into_parts();
    assert_eq!(read.id, open.id);
    for lane in [Lane::Write, Lane::Io] {
        expect_code(w.billing.auth().authenticate_for(&w.admin_key(), Some(b.id), lane), Code::PERMISSION_FORBIDDEN);
    }
    let (_, scoped) = w.scoped_key(&[w.boot.branch.id]);
    expect_code(w.billing.auth().authenticate_for(&scoped, Some(b.id), Lane::Read), Code::PERMISSION_FORBIDDEN);
    let branch_admin = w.user(Role::BranchAdmin, &[w.boot.branch.id]);
    expect_code(
        w.billing.auth().authenticate_for(&w.bearer(&branch_admin), Some(b.id), Lane::Read),
        Code::PERMISSION_FORBIDDEN,
    );
    let org_admin = w.user(Role::OrganizationAdmin, &[]);
    assert_eq!(
        w.billing
            .auth()
            .authenticate_for(&w.bearer(&org_admin), Some(b.id), Lane::Read)
            .unwrap()
            .branch
            .id,
        b.id
    );
    // Never chosen by default, and not listed.
    assert_eq!(w.branch_names(&w.admin), vec!["Main"]);
}
