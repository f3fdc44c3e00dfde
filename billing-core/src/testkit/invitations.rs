//! Invitations: who may invite whom to which branch, the 7-day expiry in organization time,
//! and the e-mail recorded in the notification outbox (only when the invitation is made).

use super::tx::email;
use super::{expect_code, start, Harness, World};
use crate::auth::Scope;
use crate::error::{Code, Result};
use crate::fields::Language;
use crate::ids::BranchId;
use crate::notification::Channel;
use crate::org::InviteRequest;
use crate::org::{Invitation, Role};
use crate::sandbox::Advance;
use crate::store::Store;
use chrono::Duration;
use serde_json::json;

fn invite<S: Store>(w: &World<S>, s: &Scope, to: &str, role: Role, branches: &[BranchId]) -> Result<Invitation> {
    w.billing.org().invite(
        s,
        InviteRequest {
            email: email(to),
            role,
            branches: branches.to_vec(),
        },
        Language::En,
    )
}

pub fn org_admin_invites_to_any_branch<H: Harness>() {
    let w = World::new(H::store());
    let main = w.boot.branch.id;
    let b = w.new_branch("Bravo");
    assert!(w.notifications().is_empty());
    let now = w.now();
    let inv = invite(&w, &w.admin, "New.Person@Example.com", Role::BranchUser, &[b.id, main]).unwrap();
    assert_eq!(inv.organization_id, w.boot.org.id);
    assert_eq!(inv.email.as_str(), "New.Person@Example.com");
    assert_eq!(inv.role, Role::BranchUser);
    assert_eq!(inv.branches, vec![b.id, main]);
    assert_eq!(inv.created_by, w.boot.user.id);
    assert_eq!(inv.language, Language::En);
    assert_eq!(inv.created_at, now);
    assert_eq!(inv.expire_at, now + Duration::days(7));

    let ns = w.notifications();
    assert_eq!(ns.len(), 1, "one e-mail recorded");
    let n = &ns[0];
    assert_eq!(n.org_id, w.boot.org.id);
    assert_eq!(n.channel, Channel::Email);
    assert_eq!(n.recipient, "New.Person@Example.com");
    assert_eq!(n.kind, crate::notification::Kind::OrganizationInvite);
    assert_eq!(n.status, crate::notification::Status::Pending);
    assert_eq!(n.language, Language::En);
    assert_eq!(n.created_at, now);
    assert_eq!(n.sent_at, None);
    assert_eq!(n.payload["invitation_id"], json!(inv.id));
    assert_eq!(n.payload["role"], json!("branch_user"));
    assert_eq!(n.payload["organization"], json!("Testkit Org"));
    assert_eq!(n.payload["expire_at"], json!("2026-01-22T09:00:01.000000Z"));

    let admin_inv = invite(&w, &w.admin, "boss@example.com", Role::OrganizationAdmin, &[]).unwrap();
    assert_eq!(admin_inv.role, Role::OrganizationAdmin);
    let ns = w.notifications();
    assert_eq!(ns.len(), 2);
    assert_eq!(ns[1].payload["invitation_id"], json!(admin_inv.id));
    assert_eq!(ns[1].payload["role"], json!("organization_admin"));
}

pub fn branch_admin_invites_to_own_branches_only<H: Harness>() {
    let w = World::new(H::store());
    let main = w.boot.branch.id;
    let b = w.new_branch("Bravo");
    let c = w.new_branch("Charlie");
    let (_, key) = w.scoped_key(&[b.id]);
    let ba = w.user(Role::BranchAdmin, &[c.id]);
    for (s, own, foreign) in [(w.auth(&key, None), b.id, c.id), (w.auth(&w.bearer(&ba), None), c.id, b.id)] {
        let before = w.notifications().len();
        expect_code(invite(&w, &s, "x@example.com", Role::BranchUser, &[foreign]), Code::PERMISSION_FORBIDDEN);
        expect_code(invite(&w, &s, "x@example.com", Role::BranchUser, &[own, main]), Code::PERMISSION_FORBIDDEN);
        expect_code(invite(&w, &s, "x@example.com", Role::OrganizationAdmin, &[own]), Code::PERMISSION_FORBIDDEN);
        expect_code(invite(&w, &s, "x@example.com", Role::OrganizationAdmin, &[]), Code::PERMISSION_FORBIDDEN);
        assert_eq!(w.notifications().len(), before, "refusals record nothing");
        let inv = invite(&w, &s, "y@example.com", Role::BranchUser, &[own]).unwrap();
        assert_eq!(inv.created_by, s.actor.user_id);
        invite(&w, &s, "z@example.com", Role::BranchAdmin, &[own]).unwrap();
        let ns = w.notifications();
        assert_eq!(ns.len(), before + 2);
        assert_eq!(ns[before].payload["invitation_id"], json!(inv.id));
    }
}

pub fn branch_user_cannot_invite<H: Harness>() {
    let w = World::new(H::store());
    let main = w.boot.branch.id;
    let user = w.user(Role::BranchUser, &[main]);
    let s = w.auth(&w.bearer(&user), None);
    expect_code(invite(&w, &s, "x@example.com", Role::BranchUser, &[main]), Code::PERMISSION_FORBIDDEN);
    expect_code(invite(&w, &s, "x@example.com", Role::OrganizationAdmin, &[]), Code::PERMISSION_FORBIDDEN);
    assert!(w.notifications().is_empty());
}

pub fn invitation_expires_in_seven_days_of_org_time<H: Harness>() {
    let w = World::new(H::store());
    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::days(3))).unwrap();
    w.tick(60);
    let s = w.fresh_admin();
    let org_now = start() + Duration::days(3) + Duration::seconds(60);
    let inv = invite(&w, &s, "later@example.com", Role::BranchUser, &[w.boot.branch.id]).unwrap();
    assert_eq!(inv.created_at, org_now);
    assert_eq!(inv.expire_at, org_now + Duration::days(7));
    let ns = w.notifications();
    assert_eq!(ns.len(), 1);
    assert_eq!(ns[0].created_at, org_now);
    assert_eq!(ns[0].payload["expire_at"], json!("2026-01-25T09:01:00.000000Z"));
}

pub fn invite_to_unknown_branch_records_nothing<H: Harness>() {
    let w = World::new(H::store());
    let other = w.other_org("Other Org", false);
    expect_code(
        invite(&w, &w.admin, "x@example.com", Role::BranchUser, &[w.boot.branch.id, BranchId::new()]),
        Code::NOT_FOUND,
    );
    expect_code(invite(&w, &w.admin, "x@example.com", Role::BranchUser, &[other.branch.id]), Code::NOT_FOUND);
    let b = w.new_branch("Bravo");
    w.billing.branches().delete(&w.admin, b.id).unwrap();
    expect_code(invite(&w, &w.admin, "x@example.com", Role::BranchUser, &[b.id]), Code::NOT_FOUND);
    assert!(w.notifications().is_empty());
    assert!(w.read(|tx| tx.list_notifications(other.org.id)).is_empty());
}
