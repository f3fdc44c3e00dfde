//! Authentication: API keys, bearer tokens, and the branch a request may act in.

use super::{expect_code, expect_invalid, Harness, World, JWT_SECRET};
use crate::auth::NewApiKey;
use crate::auth::{jwt, BranchAccess, Claims, Credential, KeyPair};
use crate::error::Code;
use crate::ids::{BranchId, OrgId, UserId};
use crate::org::Role;
use chrono::Duration;

pub fn api_key_authenticates<H: Harness>() {
    let w = World::new(H::store());
    let s = w.billing.auth().authenticate(&w.admin_key(), None).unwrap();
    assert_eq!(s.org, w.boot.org);
    assert_eq!(s.branch.id, w.boot.branch.id, "the key's default branch");
    assert_eq!(s.actor.user_id, w.boot.user.id);
    assert_eq!(s.actor.role, Role::OrganizationAdmin);
    assert_eq!(s.actor.access, BranchAccess::All);
    assert!(s.actor.api_key_id.is_some());

    // The header form decodes to the same credential.
    let header = w.boot.api_key.header_value();
    let cred = Credential::from_api_key_header(&header).unwrap();
    assert_eq!(w.billing.auth().authenticate(&cred, None).unwrap(), s);

    // An all-branches key reaches branches made after it.
    let later = w.new_branch("Later");
    let s2 = w.billing.auth().authenticate(&w.admin_key(), Some(later.id)).unwrap();
    assert_eq!(s2.branch.id, later.id);
    assert_eq!(s2.branch.name, "Later");
}

pub fn bad_api_keys_are_unauthorized<H: Harness>() {
    let w = World::new(H::store());
    let main = w.boot.branch.id;
    let wrong_secret = Credential::ApiKey {
        key: w.boot.api_key.key.clone(),
        secret: "sk_wrong".into(),
    };
    expect_code(w.billing.auth().authenticate(&wrong_secret, None), Code::UNAUTHORIZED);
    let unknown = KeyPair::generate();
    expect_code(
        w.billing.auth().authenticate(
            &Credential::ApiKey {
                key: unknown.key,
                secret: unknown.secret,
            },
            None,
        ),
        Code::UNAUTHORIZED,
    );

    let (_, revoked) = w.insert_key(main, Some(w.now()));
    expect_code(w.billing.auth().authenticate(&revoked, None), Code::UNAUTHORIZED);
    expect_code(w.billing.auth().authenticate(&revoked, Some(main)), Code::UNAUTHORIZED);

    // A live key's secret does not open another key.
    let (_, live) = w.insert_key(main, None);
    w.auth(&live, None);
    let Credential::ApiKey { secret: live_secret, .. } = &live else {
        unreachable!()
    };
    let crossed = Credential::ApiKey {
        key: w.boot.api_key.key.clone(),
        secret: live_secret.clone(),
    };
    expect_code(w.billing.auth().authenticate(&crossed, None), Code::UNAUTHORIZED);
}

pub fn inaccessible_branch_is_forbidden<H: Harness>() {
    let w = World::new(H::store());
    let main = w.boot.branch.id;
    let b = w.new_branch("Scoped");
    let gone = w.new_branch("Gone");
    w.billing.branches().delete(&w.admin, gone.id).unwrap();
    let other = w.other_org("Other Org", false);
    let (_, scoped) = w.scoped_key(&[b.id]);

    assert_eq!(w.auth(&scoped, None).branch.id, b.id);
    expect_code(w.billing.auth().authenticate(&scoped, Some(main)), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.auth().authenticate(&w.admin_key(), Some(BranchId::new())), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.auth().authenticate(&w.admin_key(), Some(other.branch.id)), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.auth().authenticate(&w.admin_key(), Some(gone.id)), Code::PERMISSION_FORBIDDEN);
    expect_code(
        w.billing.auth().authenticate(&World::<H::S>::key_of(&other), Some(main)),
        Code::PERMISSION_FORBIDDEN,
    );
}

pub fn scoped_key_acts_as_branch_admin<H: Harness>() {
    let w = World::new(H::store());
    let main = w.boot.branch.id;
    let b = w.new_branch("Bravo");
    let c = w.new_branch("Charlie");
    let (key, cred) = w.scoped_key(&[b.id, c.id]);
    assert_eq!(key.default_branch_id, b.id, "the first branch is the default");
    assert!(!key.is_all_branches);

    let s = w.auth(&cred, None);
    assert_eq!(s.branch.id, b.id);
    assert_eq!(s.actor.role, Role::BranchAdmin);
    assert_eq!(s.actor.access, BranchAccess::Only(vec![b.id, c.id]));
    assert_eq!(s.actor.api_key_id, Some(key.id));
    assert_eq!(w.auth(&cred, Some(c.id)).branch.id, c.id);

    assert_eq!(w.branch_names(&s), vec!["Bravo", "Charlie"]);
    expect_code(w.billing.branches().get(&s, main), Code::PERMISSION_FORBIDDEN);
    assert_eq!(w.billing.branches().get(&s, c.id).unwrap().id, c.id);

    // May rename its own branches, not others.
    let renamed = w.billing.branches().update(&s, c.id, "Charlie 2".into()).unwrap();
    assert_eq!(renamed.name, "Charlie 2");
    expect_code(w.billing.branches().update(&s, main, "Mine now".into()), Code::PERMISSION_FORBIDDEN);
    assert_eq!(w.billing.branches().get(&w.admin, main).unwrap().name, "Main");
    assert_eq!(w.branch_names(&w.admin), vec!["Main", "Bravo", "Charlie 2"]);
}

pub fn create_api_key_refusals_write_nothing<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let c = w.new_branch("Charlie");
    let other = w.other_org("Other Org", false);
    let req = NewApiKey {
        name: "bad".into(),
        branch_ids: vec![b.id],
        default_branch_id: Some(c.id),
        is_all_branches: false,
    };
    expect_invalid(w.billing.api_keys().create_for(w.boot.org.id, &req), "default_branch_id");
    let req = NewApiKey {
        name: "bad".into(),
        branch_ids: vec![other.branch.id],
        default_branch_id: None,
        is_all_branches: false,
    };
    expect_code(w.billing.api_keys().create_for(w.boot.org.id, &req), Code::NOT_FOUND);
    let req = NewApiKey {
        name: "bad".into(),
        branch_ids: vec![],
        default_branch_id: None,
        is_all_branches: false,
    };
    expect_invalid(w.billing.api_keys().create_for(w.boot.org.id, &req), "default_branch_id");
    expect_code(
        w.billing.api_keys().create_for(
            OrgId::new(),
            &NewApiKey {
                is_all_branches: true,
                ..Default::default()
            },
        ),
        Code::NOT_FOUND,
    );
    assert_eq!(w.read(|tx| tx.count_api_keys_defaulting_to(c.id)), 0);
    assert_eq!(
        w.read(|tx| tx.count_api_keys_defaulting_to(other.branch.id)),
        1,
        "only the other org's bootstrap key"
    );

    // An all-branches key without a default gets the oldest branch.
    let (key, pair) = w
        .billing
        .api_keys()
        .create_for(
            w.boot.org.id,
            &NewApiKey {
                name: "all".into(),
                is_all_branches: true,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(key.default_branch_id, w.boot.branch.id);
    assert_eq!(key.user_id, w.boot.user.id, "keys act for the oldest admin");
    assert_eq!(w.read(|tx| tx.api_key_by_key(&pair.key)), Some(key.clone()));
    let s = w.auth(
        &Credential::ApiKey {
            key: pair.key,
            secret: pair.secret,
        },
        Some(c.id),
    );
    assert_eq!((s.actor.role, s.branch.id), (Role::OrganizationAdmin, c.id));
}

pub fn jwt_authenticates<H: Harness>() {
    let w = World::new(H::store());
    let b = w.new_branch("Bravo");
    let cred = Credential::Bearer(w.boot.token.clone());
    let s = w.auth(&cred, None);
    assert_eq!(s.org, w.boot.org);
    assert_eq!(s.actor.user_id, w.boot.user.id);
    assert_eq!(s.actor.role, Role::OrganizationAdmin);
    assert_eq!(s.actor.access, BranchAccess::All);
    assert_eq!(s.actor.api_key_id, None);
    assert_eq!(s.branch.id, w.boot.branch.id, "without x-branch-id: the oldest branch");
    assert_eq!(w.auth(&cred, Some(b.id)).branch.id, b.id);
    let header = format!("Bearer {}", w.boot.token);
    assert_eq!(w.auth(&Credential::from_authorization_header(&header).unwrap(), None), s);
    // A token the server issues now works the same.
    let fresh = w.billing.auth().issue_token(&w.boot.user, Duration::minutes(5));
    assert_eq!(w.auth(&Credential::Bearer(fresh), None).actor.user_id, w.boot.user.id);
}

pub fn bad_and_expired_jwts_are_unauthorized<H: Harness>() {
    let w = World::new(H::store());
    let token = w.billing.auth().issue_token(&w.boot.user, Duration::hours(1));
    let cred = Credential::Bearer(token.clone());
    w.tick(3599);
    w.auth(&cred, None);
    w.tick(1);
    expect_code(w.billing.auth().authenticate(&cred, None), Code::UNAUTHORIZED);
    // The 30-day bootstrap token is still fine.
    w.auth(&Credential::Bearer(w.boot.token.clone()), None);

    let claims = Claims {
        sub: w.boot.user.id,
        org: w.boot.org.id,
        exp: (w.now() + Duration::hours(1)).timestamp(),
    };
    let foreign = jwt::encode(b"another-secret", &claims);
    expect_code(w.billing.auth().authenticate(&Credential::Bearer(foreign), None), Code::UNAUTHORIZED);
    let ghost = jwt::encode(
        JWT_SECRET,
        &Claims {
            sub: UserId::new(),
            ..claims.clone()
        },
    );
    expect_code(w.billing.auth().authenticate(&Credential::Bearer(ghost), None), Code::UNAUTHORIZED);
    let other = w.other_org("Other Org", false);
    let wrong_org = jwt::encode(
        JWT_SECRET,
        &Claims {
            org: other.org.id,
            ..claims.clone()
        },
    );
    expect_code(w.billing.auth().authenticate(&Credential::Bearer(wrong_org), None), Code::UNAUTHORIZED);
    let good = jwt::encode(JWT_SECRET, &claims);
    let mut tampered = good.clone();
    tampered.pop();
    tampered.push(if good.ends_with('A') { 'B' } else { 'A' });
    expect_code(w.billing.auth().authenticate(&Credential::Bearer(tampered), None), Code::UNAUTHORIZED);
    expect_code(w.billing.auth().authenticate(&Credential::Bearer("not.a.jwt".into()), None), Code::UNAUTHORIZED);
    w.auth(&Credential::Bearer(good), None);
}

pub fn branch_user_jwt_sees_only_its_branches<H: Harness>() {
    let w = World::new(H::store());
    let main = w.boot.branch.id;
    let b = w.new_branch("Bravo");
    let c = w.new_branch("Charlie");
    let d = w.new_branch("Delta");
    let user = w.user(Role::BranchUser, &[c.id, b.id]);
    let cred = w.bearer(&user);
    let s = w.auth(&cred, None);
    assert_eq!(s.actor.role, Role::BranchUser);
    assert_eq!(s.actor.user_id, user.id);
    assert_eq!(s.branch.id, b.id, "the oldest of its branches");
    assert_eq!(w.branch_names(&s), vec!["Bravo", "Charlie"]);
    assert_eq!(w.auth(&cred, Some(c.id)).branch.id, c.id);
    expect_code(w.billing.auth().authenticate(&cred, Some(d.id)), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.auth().authenticate(&cred, Some(main)), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.branches().get(&s, d.id), Code::PERMISSION_FORBIDDEN);
    assert_eq!(w.billing.branches().get(&s, c.id).unwrap().name, "Charlie");

    let badmin = w.user(Role::BranchAdmin, &[d.id]);
    let s = w.auth(&w.bearer(&badmin), None);
    assert_eq!((s.actor.role, s.branch.id), (Role::BranchAdmin, d.id));
    assert_eq!(w.branch_names(&s), vec!["Delta"]);

    let oadmin = w.user(Role::OrganizationAdmin, &[]);
    let s = w.auth(&w.bearer(&oadmin), Some(d.id));
    assert_eq!(s.actor.access, BranchAccess::All);
    assert_eq!(w.branch_names(&s), vec!["Main", "Bravo", "Charlie", "Delta"]);
}

pub fn user_without_branches_is_forbidden<H: Harness>() {
    let w = World::new(H::store());
    let user = w.user(Role::BranchUser, &[]);
    expect_code(w.billing.auth().authenticate(&w.bearer(&user), None), Code::PERMISSION_FORBIDDEN);
    expect_code(
        w.billing.auth().authenticate(&w.bearer(&user), Some(w.boot.branch.id)),
        Code::PERMISSION_FORBIDDEN,
    );
}

/// Authentications the engine keeps (`auth::cache`) never outlive a change: a clock advance,
/// a renamed or deleted branch and a new key are seen by the very next request, on a store that
/// caches (a generation) and on one that does not. The generation, where there is one, has
/// moved by the time a change of what authentication reads has returned.
pub fn kept_authentications_follow_changes<H: Harness>() {
    use crate::sandbox::Advance;
    use crate::store::Store;
    let w = World::new(H::store());
    let key = w.admin_key();
    let other = w.new_branch("Other");
    // Twice each, so that a caching store answers the second from what it kept.
    for _ in 0..2 {
        assert_eq!(w.billing.auth().authenticate(&key, None).unwrap().org, w.boot.org);
        assert_eq!(w.billing.auth().authenticate(&key, Some(other.id)).unwrap().branch.name, "Other");
    }

    // (That other writes leave the generation alone is each store's own test: on PostgreSQL,
    // notices of the changes above may still be arriving here.)
    let g0 = w.billing.engine().store.auth_generation();

    // The test clock lives on the organization: the next request's scope has the new time.
    let before = w.billing.engine().now(&w.billing.auth().authenticate(&key, None).unwrap());
    w.billing.sandbox().advance(&w.admin, Advance::By(Duration::hours(5))).unwrap();
    if let Some(g0) = g0 {
        assert_ne!(
            w.billing.engine().store.auth_generation(),
            Some(g0),
            "an organization change moves the generation"
        );
    }
    let after = w.billing.engine().now(&w.billing.auth().authenticate(&key, None).unwrap());
    assert!(after - before >= Duration::hours(5), "the kept scope has the old clock: {before} → {after}");

    // A renamed branch, then a deleted one.
    w.billing.branches().update(&w.admin, other.id, "Renamed".into()).unwrap();
    assert_eq!(w.billing.auth().authenticate(&key, Some(other.id)).unwrap().branch.name, "Renamed");
    w.billing.branches().delete(&w.admin, other.id).unwrap();
    expect_code(w.billing.auth().authenticate(&key, Some(other.id)), Code::PERMISSION_FORBIDDEN);

    // A scoped key made now works at once, and reaches only its branch.
    let third = w.new_branch("Third");
    let (_, scoped) = w.scoped_key(&[third.id]);
    assert_eq!(w.billing.auth().authenticate(&scoped, None).unwrap().branch.id, third.id);
    expect_code(w.billing.auth().authenticate(&scoped, Some(w.boot.branch.id)), Code::PERMISSION_FORBIDDEN);
    // A wrong secret stays wrong however often the right one was seen.
    let Credential::ApiKey { key: k, .. } = &key else { panic!("an API key") };
    let wrong = Credential::ApiKey {
        key: k.clone(),
        secret: "wrong".into(),
    };
    expect_code(w.billing.auth().authenticate(&wrong, None), Code::UNAUTHORIZED);
}

/// Keys managed by an organization admin: a revoked key is refused on its very next request,
/// even right after it was used (and kept); a rotated key's replacement has its branches; a
/// branch admin manages none; another organization's key is not found.
pub fn revoked_and_rotated_keys_are_refused_at_once<H: Harness>() {
    use crate::auth::NewApiKey;
    let w = World::new(H::store());
    let b = w.new_branch("Scoped");
    let req = NewApiKey {
        name: "integration".into(),
        branch_ids: vec![b.id],
        default_branch_id: None,
        is_all_branches: false,
    };
    let (key, pair) = w.billing.api_keys().create(&w.admin, &req).unwrap();
    let cred = Credential::ApiKey {
        key: pair.key.clone(),
        secret: pair.secret.clone(),
    };
    // Used twice, so a caching store keeps it.
    for _ in 0..2 {
        assert_eq!(w.billing.auth().authenticate(&cred, None).unwrap().branch.id, b.id);
    }
    let listed = w.billing.api_keys().list(&w.admin).unwrap();
    assert!(listed.iter().any(|k| k.id == key.id && k.revoked_at.is_none()));

    // A branch admin (this very key) cannot revoke or list keys.
    let scoped = w.billing.auth().authenticate(&cred, None).unwrap();
    expect_code(w.billing.api_keys().revoke(&scoped, key.id), Code::PERMISSION_FORBIDDEN);
    expect_code(w.billing.api_keys().list(&scoped), Code::PERMISSION_FORBIDDEN);

    // Rotation: a new key with the same branches; the old one is refused at once.
    w.tick(1);
    let (new_key, new_pair) = w.billing.api_keys().rotate(&w.admin, key.id).unwrap();
    assert_eq!((new_key.branch_ids.clone(), new_key.default_branch_id), (vec![b.id], b.id));
    assert_ne!(new_key.key, key.key);
    expect_code(w.billing.auth().authenticate(&cred, None), Code::UNAUTHORIZED);
    let new_cred = Credential::ApiKey {
        key: new_pair.key.clone(),
        secret: new_pair.secret.clone(),
    };
    assert_eq!(w.billing.auth().authenticate(&new_cred, None).unwrap().branch.id, b.id);
    expect_code(w.billing.api_keys().rotate(&w.admin, key.id), Code::INVALID_STATUS);

    // Revocation of the replacement, right after it was used.
    let revoked = w.billing.api_keys().revoke(&w.admin, new_key.id).unwrap();
    assert!(revoked.revoked_at.is_some());
    expect_code(w.billing.auth().authenticate(&new_cred, None), Code::UNAUTHORIZED);
    // Again is a no-op that keeps the first time.
    assert_eq!(w.billing.api_keys().revoke(&w.admin, new_key.id).unwrap().revoked_at, revoked.revoked_at);
    // The admin's own key still works; unknown and foreign keys are not found.
    w.billing.auth().authenticate(&w.admin_key(), None).unwrap();
    expect_code(w.billing.api_keys().revoke(&w.admin, crate::ids::ApiKeyId::new()), Code::NOT_FOUND);
    let other = w.other_org("Other Org", false);
    let other_scope = w.billing.auth().authenticate(&World::<H::S>::key_of(&other), None).unwrap();
    expect_code(w.billing.api_keys().revoke(&other_scope, w.admin.actor.api_key_id.unwrap()), Code::NOT_FOUND);
    w.billing.auth().authenticate(&w.admin_key(), None).unwrap();
}
