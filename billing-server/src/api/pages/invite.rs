//! The hosted page an invitation e-mail links to by default (`/invite/accept?token=…`): it
//! names the organization and the role and asks for a name; its form posts to the same path
//! (form-encoded, no script), which accepts the invitation (the same core operation as
//! `POST /api/v2/organization/invite/accept`) and shows the new user's bearer token once. In
//! the invitation's language (`?language=ar|en` to switch). No credentials: the token is one.

use super::{Page, Reply, Request};
use crate::backend::Backend;
use crate::router::{public, PublicRoute};
use billing_core::error::{Code, Error, Result};
use billing_core::fields::Language;
use billing_core::notification::template::esc;
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

fn document(l: Language, title: &str, token: &str, main: &str) -> String {
    let (code, dir, other) = match l {
        Language::Ar => ("ar", "rtl", "en"),
        Language::En => ("en", "ltr", "ar"),
    };
    let switch = if token.is_empty() {
        String::new()
    } else {
        format!(
            "<nav class=\"lang\"><a href=\"/invite/accept?token={}&amp;language={other}\" lang=\"{other}\">{}</a></nav>\n",
            esc(token),
            texts(l).other
        )
    };
    format!(
        "<!doctype html>\n<html lang=\"{code}\" dir=\"{dir}\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"referrer\" content=\"no-referrer\">\n\
<title>{}</title>\n<link rel=\"stylesheet\" href=\"/pay/assets/checkout.css\">\n</head>\n<body>\n{switch}<main class=\"sheet\">\n{main}</main>\n</body>\n</html>\n",
        esc(title)
    )
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
    Reply::Page(Page::html(
        status,
        false,
        document(l, msg, "", &format!("<p class=\"notice\">{}</p>\n", esc(msg))),
    ))
}

fn form(b: &Billing<Backend>, r: &Request, token: &str, problem: Option<&str>) -> Result<Reply> {
    let (inv, org) = match b.invitation_of(token) {
        Ok(found) => found,
        Err(e @ (Error::Rule { .. } | Error::Validation(_))) => return Ok(refused(language(r, Language::default()), &e)),
        Err(e) => return Err(e),
    };
    let l = language(r, inv.language);
    let t = texts(l);
    let mut main = format!(
        "<h1>{} {}</h1>\n<p class=\"description\">{} {} ({})</p>\n",
        t.title,
        esc(&org.name),
        t.invited,
        role_name(inv.role, l),
        esc(inv.email.as_str())
    );
    if let Some(p) = problem {
        main.push_str(&format!("<p class=\"form-error\" role=\"alert\">{}</p>\n", esc(p)));
    }
    main.push_str(&format!(
        "<form method=\"post\" action=\"/invite/accept\">\n<input type=\"hidden\" name=\"token\" value=\"{}\">\n\
<input type=\"hidden\" name=\"language\" value=\"{}\">\n\
<div class=\"field\"><label for=\"first_name\">{}</label><input id=\"first_name\" name=\"first_name\" autocomplete=\"given-name\" maxlength=\"100\" required></div>\n\
<div class=\"field\"><label for=\"last_name\">{}</label><input id=\"last_name\" name=\"last_name\" autocomplete=\"family-name\" maxlength=\"100\"></div>\n\
<button class=\"pay-button\" type=\"submit\">{}</button>\n</form>\n",
        esc(token),
        l.as_str(),
        t.first_name,
        t.last_name,
        t.accept
    ));
    Ok(Reply::Page(Page::html(
        200,
        false,
        document(l, &format!("{} {}", t.title, org.name), token, &main),
    )))
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
    let out = match b.accept_invitation(&req) {
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
            return Ok(Reply::Page(Page::html(
                422,
                false,
                document(fallback, &msg, "", &format!("<p class=\"notice\">{}</p>\n", esc(&msg))),
            )));
        }
        Err(e @ Error::Rule { .. }) => return Ok(refused(fallback, &e)),
        Err(e) => return Err(e),
    };
    let t = texts(fallback);
    let org = out["organization"]["name"].as_str().unwrap_or_default();
    let main = format!(
        "<h1>{} {}</h1>\n<p class=\"description\">{}</p>\n<p>{}</p>\n<p class=\"reference\" dir=\"ltr\"><code>{}</code></p>\n<p class=\"hint\" dir=\"ltr\">{} …</p>\n",
        t.joined,
        esc(org),
        esc(out["user"]["email"].as_str().unwrap_or_default()),
        t.token,
        esc(out["access_token"].as_str().unwrap_or_default()),
        t.token_hint,
    );
    Ok(Reply::Page(Page::html(
        200,
        false,
        document(fallback, &format!("{} {org}", t.joined), "", &main),
    )))
}
