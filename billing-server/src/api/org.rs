//! The caller and its organization: `/me`, `/organization/invite` (and its public `/accept`),
//! `/organization/settings`.

use super::{Reply, Request};
use crate::backend::Backend;
use crate::openapi::doc::doc;
use crate::router::{public, route, PublicRoute, Route};
use billing_core::auth::Scope;
use billing_core::error::Result;
use billing_core::fields::Language;
use billing_core::org::ops::lane;
use billing_core::org::settings::{self, SettingsPatch};
use billing_core::org::settings_view::OrganizationSettings;
use billing_core::org::view::{InviteAccepted, MeResponse, OrganizationInviteResponse};
use billing_core::org::wire::request;
use billing_core::org::InviteRequest;
use billing_core::Billing;
use hyper::Method;

pub static ROUTES: &[Route] = &[
    route(Method::GET, "/me", me, lane::ME).doc(doc("get_me", "Organization", "The authenticated user and organization").ok::<MeResponse>()),
    route(Method::POST, "/organization/invite", invite, lane::INVITE).doc(
        doc("invite_user", "Organization", "Invite a user by e-mail (header `language`: AR or EN)")
            .body::<request::OrganizationInviteCreate>(
                r#"{"email": "new.admin@example.com", "role": "branch_admin", "branches": ["0190a6b2-7c3e-7a01-9d2f-4b5c6d7e8f90"]}"#,
            )
            .ok::<OrganizationInviteResponse>(),
    ),
    route(Method::GET, "/organization/settings", get_settings, settings::lane::GET)
        .doc(doc("get_organization_settings", "Organization", "The organization's settings (organization admins)").ok::<OrganizationSettings>()),
    route(Method::PATCH, "/organization/settings", update_settings, settings::lane::UPDATE).doc(
        doc(
            "update_organization_settings",
            "Organization",
            "Change the organization's settings (organization admins)",
        )
        .body::<request::OrganizationSettingsUpdate>(r#"{"vat_rate": "15", "default_currency": "SAR"}"#)
        .ok::<OrganizationSettings>(),
    ),
];

/// Accepting an invitation takes no credential: the token of the invitation's e-mail is one.
pub static PUBLIC_ROUTES: &[PublicRoute] = &[public(
    Method::POST,
    "/api/v2/organization/invite/accept",
    accept_invite,
    billing_core::org::accept::lane::ACCEPT,
)
.doc(
    doc("accept_invite", "Organization", "Accept an invitation (no credential: the token is one)")
        .body::<request::InviteAccept>(r#"{"token": "inv_3Jd8sKq0PzY1", "first_name": "Sara", "last_name": "Ali"}"#)
        .ok::<InviteAccepted>(),
)];

fn accept_invite(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let req = billing_core::org::accept::AcceptRequest::parse(r.body()?)?;
    Ok(Reply::of(&b.org().accept(&req)?.response()))
}

fn me(b: &Billing<Backend>, s: &Scope, _: Request) -> Result<Reply> {
    Ok(Reply::of(&b.org().me(s)?.me(&s.org)))
}

fn invite(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let req = InviteRequest::parse(r.body()?)?;
    // The `language` header picks the invitation e-mail's language; AR by default.
    let language = r.language.as_deref().and_then(|l| Language::parse(l).ok()).unwrap_or_default();
    Ok(Reply::of(&b.org().invite(s, req, language)?.response()))
}

fn get_settings(b: &Billing<Backend>, s: &Scope, _: Request) -> Result<Reply> {
    Ok(Reply::of(&b.org().settings(s)?.view(s.org_id())))
}

fn update_settings(b: &Billing<Backend>, s: &Scope, r: Request) -> Result<Reply> {
    let patch = SettingsPatch::parse(r.body()?)?;
    Ok(Reply::of(&b.org().update_settings(s, &patch)?.view(s.org_id())))
}
