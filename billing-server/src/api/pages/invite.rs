//! The hosted page an invitation e-mail links to by default (`/invite/accept?token=…`): it
//! names the organization and the role and asks for a name; its form posts to the same path
//! (form-encoded, no script), which accepts the invitation (the same core operation as
//! `POST /api/v2/organization/invite/accept`) and shows the new user's bearer token once. In
//! the invitation's language (`?language=ar|en` to switch). No credentials: the token is one.
//! Templates: `invite.html` (the form), `invite_joined.html` (the token), `notice.html` (a
//! refused token or form).

use super::{html, other, Doc, Notice, Switch};
use crate::api::{Reply, Request};
use crate::backend::Backend;
use crate::router::{public, PublicRoute};
use askama::Template;
use billing_core::error::{Code, Error, Result};
use billing_core::fields::Language;
use billing_core::org::accept::{lane, AcceptRequest};
use billing_core::org::Role;
use billing_core::Billing;
use hyper::Method;
use serde_json::json;

pub static ROUTES: &[PublicRoute] = &[
    public(Method::GET, "/invite/accept", page, lane::PAGE),
    public(Method::POST, "/invite/accept", submit, lane::ACCEPT),
];

struct Texts {
    title: &'static str,
    invited: &'static str,
    first_name: &'static str,
    last_name: &'static str,
    accept: &'static str,
    joined: &'static str,
    token: &'static str,
    token_hint: &'static str,
    invalid: &'static str,
    expired: &'static str,
    name_needed: &'static str,
    other: &'static str,
}

fn texts(l: Language) -> Texts {
    match l {
        Language::Ar => Texts {
            title: "الانضمام إلى",
            invited: "دُعيت للانضمام بصلاحية",
            first_name: "الاسم الأول",
            last_name: "اسم العائلة",
            accept: "قبول الدعوة",
            joined: "انضممت إلى",
            token: "رمز الدخول (صالح 30 يوماً، يظهر مرة واحدة)",
            token_hint: "استخدمه مع الواجهة البرمجية في الترويسة Authorization: Bearer",
            invalid: "رابط الدعوة هذا غير صالح.",
            expired: "انتهت صلاحية هذه الدعوة أو سبق استخدامها.",
            name_needed: "أدخل اسمك الأول.",
            other: "English",
        },
        Language::En => Texts {
            title: "Join",
            invited: "You are invited to join as",
            first_name: "First name",
            last_name: "Last name",
            accept: "Accept the invitation",
            joined: "You have joined",
            token: "Your access token (valid 30 days, shown once)",
            token_hint: "Use it with the API in the header Authorization: Bearer",
            invalid: "This invitation link is not valid.",
            expired: "This invitation has expired or was already used.",
            name_needed: "Enter your first name.",
            other: "العربية",
        },
    }
}

fn role_name(r: Role, l: Language) -> &'static str {
    match (r, l) {
        (Role::OrganizationAdmin, Language::Ar) => "مدير المنشأة",
        (Role::BranchAdmin, Language::Ar) => "مدير فرع",
        (Role::BranchUser, Language::Ar) => "مستخدم فرع",
        (Role::OrganizationAdmin, Language::En) => "organization admin",
        (Role::BranchAdmin, Language::En) => "branch admin",
        (Role::BranchUser, Language::En) => "branch user",
    }
}

/// The document of an invitation page in `l`; with the invitation's `token`, a link to the page
/// in the other language.
fn doc(l: Language, title: String, token: &str) -> Doc {
    let switch = (!token.is_empty()).then(|| {
        let other = other(l);
        Switch {
            href: format!("/invite/accept?token={token}&language={}", other.as_str()),
            lang: other.as_str(),
            hreflang: false,
            name: texts(l).other,
        }
    });
    Doc::new(l, title, None, switch)
}

/// A page that only says `msg`.
fn notice(status: u16, l: Language, msg: &str) -> Reply {
    html(status, false, &Notice::new(doc(l, msg.to_string(), ""), None, &[msg]))
}

/// The invitation and a form asking for a name.
#[derive(Template)]
#[template(path = "invite.html")]
struct InvitePage<'a> {
    doc: Doc,
    t: Texts,
    organization: &'a str,
    role: &'static str,
    email: &'a str,
    /// Why the form is shown again.
    problem: Option<&'a str>,
    token: &'a str,
    /// `ar` or `en`: the language of the page after posting.
    lang: &'static str,
}

/// An accepted invitation: the new user's bearer token, shown once.
#[derive(Template)]
#[template(path = "invite_joined.html")]
struct JoinedPage<'a> {
    doc: Doc,
    t: Texts,
    organization: &'a str,
    email: &'a str,
    access_token: &'a str,
}

fn language(r: &Request, fallback: Language) -> Language {
    r.query
        .get("language")
        .or(r.form.get("language"))
        .and_then(|l| Language::parse(l).ok())
        .unwrap_or(fallback)
}

/// The page of a refused token: 404 (not valid) or 410 (used or expired).
fn refused(l: Language, e: &Error) -> Reply {
    let t = texts(l);
    let (status, msg) = match e {
        Error::Rule {
            code: Code::INVITATION_EXPIRED,
            ..
        } => (410, t.expired),
        _ => (404, t.invalid),
    };
    notice(status, l, msg)
}

fn form(b: &Billing<Backend>, r: &Request, token: &str, problem: Option<&str>) -> Result<Reply> {
    let (inv, org) = match b.org().invitation(token) {
        Ok(found) => found,
        Err(e @ (Error::Rule { .. } | Error::Validation(_))) => return Ok(refused(language(r, Language::default()), &e)),
        Err(e) => return Err(e),
    };
    let l = language(r, inv.language);
    let t = texts(l);
    let page = InvitePage {
        doc: doc(l, format!("{} {}", t.title, org.name), token),
        organization: &org.name,
        role: role_name(inv.role, l),
        email: inv.email.as_str(),
        problem,
        token,
        lang: l.as_str(),
        t,
    };
    Ok(html(200, false, &page))
}

fn page(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let token = r.query.get("token").unwrap_or_default().trim().to_string();
    form(b, &r, &token, None)
}

fn submit(b: &Billing<Backend>, r: Request) -> Result<Reply> {
    let field = |k: &str| r.form.get(k).map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
    let token = field("token").unwrap_or_default();
    let fallback = language(&r, Language::default());
    if field("first_name").is_none() {
        return form(b, &r, &token, Some(texts(fallback).name_needed));
    }
    let body = json!({"token": token, "first_name": field("first_name"), "last_name": field("last_name")});
    let req = match AcceptRequest::parse(&body) {
        Ok(req) => req,
        Err(Error::Validation(d)) => {
            let msg = d
                .iter()
                .map(|e| e.msg.trim_start_matches("Value error, ").to_string())
                .collect::<Vec<_>>()
                .join("; ");
            return form(b, &r, &token, Some(&msg));
        }
        Err(e) => return Err(e),
    };
    let out = match b.org().accept(&req) {
        Ok(out) => out,
        Err(
            e @ Error::Rule {
                code: Code::USER_ALREADY_REGISTERED,
                ..
            },
        ) => {
            let msg = match &e {
                Error::Rule { info: Some(i), .. } => i.clone(),
                _ => e.to_string(),
            };
            return Ok(notice(422, fallback, &msg));
        }
        Err(e @ Error::Rule { .. }) => return Ok(refused(fallback, &e)),
        Err(e) => return Err(e),
    };
    let t = texts(fallback);
    let org = out.org.name.as_str();
    let page = JoinedPage {
        doc: doc(fallback, format!("{} {org}", t.joined), ""),
        organization: org,
        email: out.user.email.as_str(),
        access_token: &out.access_token,
        t,
    };
    Ok(html(200, false, &page))
}
