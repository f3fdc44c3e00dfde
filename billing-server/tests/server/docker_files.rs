//! The repository's `Dockerfile` and `docker-compose.yml` against the real command line, without
//! Docker (CI has no daemon): every `--flag` of their commands is an option of the real binary at
//! that place (root or subcommand, from its `--help`), the binary itself accepts each command
//! line (it is run with `--help` appended: clap refuses an unknown option or a bad value first),
//! every `BILLING_*` variable they set is one the binary reads (`[env: …]` in its `--help`), and
//! the compose server's database URL names the compose PostgreSQL service with its user, password
//! and database. The image's health check runs, as written, against a server started with the
//! image's command line. `a_misspelt_flag_or_variable_is_caught` shows each check can fail.
//!
//! The compose file is read with a small YAML reader for the subset it uses (maps, lists, flow
//! lists of scalars, quoted scalars, comments); it refuses anything else rather than misread it.

use crate::common::process;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_billing-server");

fn repo_file(name: &str) -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// A YAML subset reader.

#[derive(Debug, Clone, PartialEq)]
enum Yaml {
    Null,
    Str(String),
    List(Vec<Yaml>),
    Map(Vec<(String, Yaml)>),
}

impl Yaml {
    fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::Str(s) => Some(s),
            _ => None,
        }
    }
}

struct Line {
    indent: usize,
    text: String,
    number: usize,
}

fn parse_yaml(src: &str) -> Result<Yaml, String> {
    let mut lines = Vec::new();
    for (n, raw) in src.lines().enumerate() {
        if raw.contains('\t') {
            return Err(format!("line {}: a tab (YAML indents with spaces)", n + 1));
        }
        let text = strip_comment(raw);
        let text = text.trim_end();
        if text.trim().is_empty() {
            continue;
        }
        let body = text.trim_start();
        lines.push(Line {
            indent: text.len() - body.len(),
            text: body.to_string(),
            number: n + 1,
        });
    }
    if lines.is_empty() {
        return Ok(Yaml::Null);
    }
    let mut i = 0;
    let value = block(&lines, &mut i, lines[0].indent)?;
    match lines.get(i) {
        None => Ok(value),
        Some(line) => Err(format!("line {}: unexpected indentation", line.number)),
    }
}

/// `raw` without its comment: a `#` at the start or after a space, outside quotes.
fn strip_comment(raw: &str) -> String {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut previous = ' ';
    for (at, c) in raw.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if double => escaped = true,
            '"' if !single => double = !double,
            '\'' if !double => single = !single,
            '#' if !single && !double && previous.is_whitespace() => return raw[..at].to_string(),
            _ => {}
        }
        previous = c;
    }
    raw.to_string()
}

fn is_item(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// `key: rest` (rest may be empty), or None when `text` is not a mapping entry.
fn split_key(text: &str) -> Option<(String, &str)> {
    if text.starts_with(['[', '{']) {
        return None;
    }
    for quote in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(quote) {
            let end = inner.find(quote)?;
            let after = &inner[end + 1..];
            let rest = after.strip_prefix(':')?;
            return (rest.is_empty() || rest.starts_with(' ')).then(|| (inner[..end].to_string(), rest.trim()));
        }
    }
    let at = text
        .char_indices()
        .find(|&(at, c)| c == ':' && (at + 1 == text.len() || text[at + 1..].starts_with(' ')))?
        .0;
    Some((text[..at].trim().to_string(), text[at + 1..].trim()))
}

fn block(lines: &[Line], i: &mut usize, indent: usize) -> Result<Yaml, String> {
    if is_item(&lines[*i].text) {
        let mut items = Vec::new();
        while *i < lines.len() && lines[*i].indent == indent && is_item(&lines[*i].text) {
            let line = &lines[*i];
            let rest = line.text[1..].trim();
            *i += 1;
            if rest.is_empty() {
                match lines.get(*i) {
                    Some(next) if next.indent > indent => items.push(block(lines, i, next.indent)?),
                    _ => items.push(Yaml::Null),
                }
            } else if split_key(rest).is_some() {
                return Err(format!("line {}: a mapping in a list item (not supported by this reader)", line.number));
            } else {
                items.push(scalar(rest, line.number)?);
            }
        }
        return Ok(Yaml::List(items));
    }
    let mut entries: Vec<(String, Yaml)> = Vec::new();
    while *i < lines.len() && lines[*i].indent == indent {
        let line = &lines[*i];
        if is_item(&line.text) {
            return Err(format!("line {}: a list item where a key was expected", line.number));
        }
        let (key, rest) = split_key(&line.text).ok_or_else(|| format!("line {}: expected `key: value`", line.number))?;
        *i += 1;
        let value = if !rest.is_empty() {
            scalar(rest, line.number)?
        } else {
            match lines.get(*i) {
                Some(next) if next.indent > indent || (next.indent == indent && is_item(&next.text)) => block(lines, i, next.indent)?,
                _ => Yaml::Null,
            }
        };
        if entries.iter().any(|(k, _)| *k == key) {
            return Err(format!("line {}: key `{key}` given twice", line.number));
        }
        entries.push((key, value));
    }
    Ok(Yaml::Map(entries))
}

fn scalar(text: &str, number: usize) -> Result<Yaml, String> {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or(format!("line {number}: a flow list must end on its line"))?;
        let mut items = Vec::new();
        for part in split_outside_quotes(inner, ',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            if part.starts_with(['[', '{']) {
                return Err(format!("line {number}: nested flow collections are not supported"));
            }
            items.push(scalar(part, number)?);
        }
        return Ok(Yaml::List(items));
    }
    if text.starts_with('"') {
        return serde_json::from_str::<String>(text)
            .map(Yaml::Str)
            .map_err(|e| format!("line {number}: double-quoted scalar {text}: {e}"));
    }
    if let Some(inner) = text.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'').ok_or(format!("line {number}: unterminated single-quoted scalar"))?;
        return Ok(Yaml::Str(inner.replace("''", "'")));
    }
    if text.starts_with(['{', '&', '*', '!', '|', '>', '%', '@', '`']) {
        return Err(format!("line {number}: `{text}` uses YAML this reader does not support"));
    }
    Ok(Yaml::Str(text.to_string()))
}

fn split_outside_quotes(text: &str, separator: char) -> Vec<&str> {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut parts = Vec::new();
    let mut start = 0;
    for (at, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if double => escaped = true,
            '"' if !single => double = !double,
            '\'' if !double => single = !single,
            _ if c == separator && !single && !double => {
                parts.push(&text[start..at]);
                start = at + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[test]
fn the_yaml_reader_reads_its_subset_and_refuses_the_rest() {
    let doc = parse_yaml("a:\n  b: \"x # y\"  # comment\n  c: ['p', \"q\", r]\n  d:\n    - one\n    - 'it''s'\n  e:\n  f: g:h\nlist:\n- 1\n").unwrap();
    let a = doc.get("a").unwrap();
    assert_eq!(a.get("b"), Some(&Yaml::Str("x # y".into())));
    assert_eq!(
        a.get("c"),
        Some(&Yaml::List(vec![Yaml::Str("p".into()), Yaml::Str("q".into()), Yaml::Str("r".into())]))
    );
    assert_eq!(a.get("d"), Some(&Yaml::List(vec![Yaml::Str("one".into()), Yaml::Str("it's".into())])));
    assert_eq!(a.get("e"), Some(&Yaml::Null));
    assert_eq!(a.get("f"), Some(&Yaml::Str("g:h".into())));
    assert_eq!(doc.get("list"), Some(&Yaml::List(vec![Yaml::Str("1".into())])));
    for bad in [
        "a: &anchor x\n",
        "a: |\n  text\n",
        "a:\n  b: 1\n   c: 2\n",
        "a: 1\na: 2\n",
        "l:\n  - k: v\n",
        "a: {b: 1}\n",
    ] {
        assert!(parse_yaml(bad).is_err(), "refused: {bad:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Compose variable interpolation: `${NAME}`, `${NAME:-default}`, `${NAME:?message}`, `$$`.

/// `text` with each variable replaced by its default, or (without one) by `value-of-NAME`, as the
/// host's value would be.
fn interpolate(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(after) = after.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(inner) = after.strip_prefix('{') {
            let end = inner.find('}').expect("an unterminated ${ in the compose file");
            let expr = &inner[..end];
            let name_end = expr.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(expr.len());
            let (name, op) = expr.split_at(name_end);
            match op.strip_prefix(":-").or_else(|| op.strip_prefix('-')) {
                Some(default) => out.push_str(default),
                None => out.push_str(&format!("value-of-{name}")),
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------------------------
// The real command line, from the binary's `--help`.

struct Cli {
    /// Long options (`--name`) and whether each takes a value.
    options: BTreeMap<String, bool>,
    commands: BTreeSet<String>,
    /// The variables the help names as `[env: NAME=…]`.
    env: BTreeSet<String>,
}

fn cli(path: &[String]) -> Cli {
    let out = Command::new(BIN).args(path).arg("--help").env_clear().output().unwrap();
    assert!(out.status.success(), "billing-server {path:?} --help: {out:?}");
    let help = String::from_utf8(out.stdout).unwrap();
    let mut options = BTreeMap::new();
    let mut commands = BTreeSet::new();
    let mut in_commands = false;
    for line in help.lines() {
        let t = line.trim_start();
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            match t.split_whitespace().next() {
                Some(name) if !line.trim().is_empty() => {
                    commands.insert(name.to_string());
                }
                _ => in_commands = false,
            }
            continue;
        }
        if t.starts_with('-') {
            let tokens: Vec<&str> = t.split_whitespace().collect();
            for (k, token) in tokens.iter().enumerate() {
                if token.starts_with("--") {
                    let takes_value = tokens.get(k + 1).is_some_and(|next| next.starts_with('<'));
                    options.insert(token.trim_end_matches(',').to_string(), takes_value);
                }
            }
        }
    }
    let env = help
        .split("[env: ")
        .skip(1)
        .filter_map(|s| s.split_once('=').map(|(name, _)| name.to_string()))
        .collect();
    Cli { options, commands, env }
}

/// What is wrong with running `billing-server <argv>` with `env` (`check_env`: and with each
/// `BILLING_*` variable of `env` being one the command reads). Empty when nothing is.
fn argv_problems(label: &str, argv: &[String], env: &[(String, String)], check_env: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let mut here = cli(&path);
    let mut k = 0;
    while k < argv.len() {
        let arg = &argv[k];
        let shown = format!("billing-server{}", path.iter().map(|p| format!(" {p}")).collect::<String>());
        if arg.starts_with("--") {
            let name = arg.split('=').next().unwrap();
            match here.options.get(name) {
                None => problems.push(format!(
                    "{label}: `{name}` is not an option of `{shown}` (its options: {})",
                    here.options.keys().cloned().collect::<Vec<_>>().join(" ")
                )),
                Some(true) if !arg.contains('=') => k += 1,
                Some(_) => {}
            }
        } else if here.commands.contains(arg) {
            path.push(arg.clone());
            here = cli(&path);
        } else {
            problems.push(format!("{label}: `{arg}` is neither an option, an option's value nor a command of `{shown}`"));
        }
        k += 1;
    }
    if check_env {
        for (name, _) in env.iter().filter(|(name, _)| name.starts_with("BILLING_")) {
            if !here.env.contains(name) {
                problems.push(format!(
                    "{label}: `{name}` is not a variable the command reads (its --help names: {})",
                    here.env.iter().cloned().collect::<Vec<_>>().join(" ")
                ));
            }
        }
    }
    // The binary's own parser: with `--help` last, it refuses an unknown option or a bad value
    // before it would print the help.
    let out = Command::new(BIN)
        .args(argv)
        .arg("--help")
        .env_clear()
        .envs(env.iter().cloned())
        .output()
        .unwrap();
    if !out.status.success() {
        problems.push(format!(
            "{label}: billing-server refuses {argv:?}: {}",
            String::from_utf8_lossy(&out.stderr).lines().next().unwrap_or_default()
        ));
    }
    problems
}

/// The value of `--flag` in `argv` (`--flag value` or `--flag=value`).
fn flag_value<'a>(argv: &'a [String], flag: &str) -> Option<&'a str> {
    argv.iter().enumerate().find_map(|(k, arg)| {
        if arg == flag {
            argv.get(k + 1).map(String::as_str)
        } else {
            arg.strip_prefix(flag).and_then(|rest| rest.strip_prefix('='))
        }
    })
}

fn env_value<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn port_of(address: &str) -> Option<&str> {
    address.rsplit_once(':').map(|(_, port)| port)
}

// ---------------------------------------------------------------------------------------------
// The Dockerfile.

struct Instruction {
    keyword: String,
    args: String,
}

/// The instructions, continuation lines joined and comments dropped.
fn parse_dockerfile(text: &str) -> Vec<Instruction> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (keyword, args) = current.split_once(char::is_whitespace).unwrap_or((&current, ""));
                out.push(Instruction {
                    keyword: keyword.to_ascii_uppercase(),
                    args: args.trim().to_string(),
                });
                current.clear();
            }
        }
    }
    out
}

fn exec_form(args: &str, what: &str) -> Result<Vec<String>, String> {
    serde_json::from_str(args).map_err(|e| format!("Dockerfile: {what} is not in exec form ([\"…\", …]): {e}"))
}

/// The final stage's instructions.
fn final_stage(instructions: &[Instruction]) -> &[Instruction] {
    let from = instructions.iter().rposition(|i| i.keyword == "FROM").expect("a FROM");
    &instructions[from..]
}

fn dockerfile_env(stage: &[Instruction]) -> Vec<(String, String)> {
    stage
        .iter()
        .filter(|i| i.keyword == "ENV")
        .flat_map(|i| match i.args.contains('=') {
            true => i
                .args
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            false => i
                .args
                .split_once(' ')
                .map(|(k, v)| (k.to_string(), v.trim().to_string()))
                .into_iter()
                .collect::<Vec<_>>(),
        })
        .collect()
}

fn healthcheck_argv(stage: &[Instruction]) -> Result<Vec<String>, String> {
    let health = stage.iter().find(|i| i.keyword == "HEALTHCHECK").ok_or("Dockerfile: no HEALTHCHECK")?;
    let (_, command) = health.args.split_once("CMD ").ok_or("Dockerfile: HEALTHCHECK without CMD")?;
    exec_form(command.trim(), "HEALTHCHECK CMD")
}

fn dockerfile_problems(text: &str) -> Vec<String> {
    let instructions = parse_dockerfile(text);
    let stage = final_stage(&instructions);
    let mut problems = Vec::new();
    let last = |keyword: &str| stage.iter().rfind(|i| i.keyword == keyword);

    let entrypoint = match last("ENTRYPOINT").map(|i| exec_form(&i.args, "ENTRYPOINT")) {
        Some(Ok(e)) => e,
        Some(Err(e)) => return vec![e],
        None => return vec!["Dockerfile: no ENTRYPOINT".into()],
    };
    if entrypoint != ["billing-server"] {
        problems.push(format!("Dockerfile: ENTRYPOINT is {entrypoint:?}, not [\"billing-server\"]"));
    }
    let cmd = match last("CMD").map(|i| exec_form(&i.args, "CMD")) {
        Some(Ok(c)) => c,
        Some(Err(e)) => return vec![e],
        None => Vec::new(),
    };
    let env = dockerfile_env(stage);
    problems.extend(argv_problems("Dockerfile CMD", &cmd, &env, true));
    // `docker run … IMAGE init --json` replaces CMD and keeps ENV.
    problems.extend(argv_problems("`docker run IMAGE init --json`", &["init".into(), "--json".into()], &env, false));

    let listen = flag_value(&cmd, "--listen").or(env_value(&env, "BILLING_LISTEN"));
    match listen {
        Some(listen) if listen.starts_with("0.0.0.0:") => {
            let port = port_of(listen).unwrap();
            if !stage.iter().any(|i| i.keyword == "EXPOSE" && i.args.split_whitespace().any(|p| p == port)) {
                problems.push(format!("Dockerfile: the server listens on port {port} but does not EXPOSE it"));
            }
            match healthcheck_argv(stage) {
                Ok(check) if check.concat().contains(&format!("/dev/tcp/127.0.0.1/{port}")) && check.concat().contains("/healthz") => {}
                Ok(check) => problems.push(format!("Dockerfile: the HEALTHCHECK {check:?} does not probe /healthz on port {port}")),
                Err(e) => problems.push(e),
            }
        }
        other => problems.push(format!("Dockerfile: the server must listen on 0.0.0.0 to be reachable, not {other:?}")),
    }
    match last("USER") {
        Some(user) if !matches!(user.args.as_str(), "root" | "0" | "0:0") => {}
        other => problems.push(format!("Dockerfile: the server must run as a non-root USER (has {:?})", other.map(|u| &u.args))),
    }
    if !stage
        .iter()
        .any(|i| i.keyword == "RUN" && i.args.contains("apt-get install") && i.args.contains("ca-certificates"))
    {
        problems.push("Dockerfile: the runtime stage must install ca-certificates (webhook TLS trusts the system's CAs)".into());
    }
    // The default database `./billing.db` is in the working directory: it must be a volume.
    if env_value(&env, "BILLING_DATABASE_URL").is_none() {
        let workdir = last("WORKDIR").map(|i| i.args.clone()).unwrap_or_else(|| "/".into());
        if !stage
            .iter()
            .any(|i| i.keyword == "VOLUME" && i.args.split_whitespace().any(|v| v.trim_matches(['[', ']', '"', ',']) == workdir))
        {
            problems.push(format!(
                "Dockerfile: the default database ./billing.db is in WORKDIR {workdir}, which is no VOLUME"
            ));
        }
    }
    if !instructions
        .iter()
        .any(|i| i.keyword == "RUN" && i.args.contains("cargo build --release") && i.args.contains("-p billing-server"))
    {
        problems.push("Dockerfile: no `cargo build --release … -p billing-server`".into());
    }
    if !stage
        .iter()
        .any(|i| i.keyword == "COPY" && i.args.starts_with("--from=") && i.args.contains("/billing-server /usr/local/bin/"))
    {
        problems.push("Dockerfile: the runtime stage does not copy the billing-server binary onto the PATH".into());
    }
    problems
}

// ---------------------------------------------------------------------------------------------
// docker-compose.yml.

fn compose_env(service: &Yaml) -> Result<Vec<(String, String)>, String> {
    match service.get("environment") {
        None | Some(Yaml::Null) => Ok(Vec::new()),
        Some(Yaml::Map(entries)) => entries
            .iter()
            .map(|(k, v)| match v {
                Yaml::Str(s) => Ok((k.clone(), s.clone())),
                Yaml::Null => Ok((k.clone(), String::new())),
                _ => Err(format!("environment {k}: not a scalar")),
            })
            .collect(),
        Some(Yaml::List(items)) => items
            .iter()
            .map(|item| {
                let s = item.as_str().ok_or("environment: a list of KEY=VALUE strings")?;
                let (k, v) = s.split_once('=').unwrap_or((s, ""));
                Ok((k.to_string(), v.to_string()))
            })
            .collect(),
        Some(_) => Err("environment: neither a map nor a list".into()),
    }
}

fn compose_command(service: &Yaml) -> Result<Vec<String>, String> {
    match service.get("command") {
        Some(Yaml::Str(s)) => Ok(s.split_whitespace().map(String::from).collect()),
        Some(Yaml::List(items)) => items
            .iter()
            .map(|i| i.as_str().map(String::from).ok_or("command: a list of strings".to_string()))
            .collect(),
        _ => Err("docker-compose.yml: services.server has no command".into()),
    }
}

struct PgUrl {
    user: String,
    password: String,
    host: String,
    port: String,
    database: String,
}

fn parse_pg_url(url: &str) -> Option<PgUrl> {
    let rest = url.strip_prefix("postgres://").or_else(|| url.strip_prefix("postgresql://"))?;
    let (userinfo, hostpart) = rest.rsplit_once('@')?;
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let (hostport, database) = hostpart.split_once('/')?;
    let database = database.split('?').next().unwrap();
    let (host, port) = hostport.split_once(':').unwrap_or((hostport, "5432"));
    Some(PgUrl {
        user: user.into(),
        password: password.into(),
        host: host.into(),
        port: port.into(),
        database: database.into(),
    })
}

fn compose_problems(text: &str) -> Vec<String> {
    let doc = match parse_yaml(text) {
        Ok(doc) => doc,
        Err(e) => return vec![format!("docker-compose.yml: {e}")],
    };
    let Some(services) = doc.get("services") else {
        return vec!["docker-compose.yml: no services".into()];
    };
    let Some(server) = services.get("server") else {
        return vec!["docker-compose.yml: no services.server".into()];
    };
    let mut problems = Vec::new();
    if server.get("build").and_then(Yaml::as_str) != Some(".") {
        problems.push("docker-compose.yml: services.server must be built from the repository's Dockerfile (`build: .`)".into());
    }
    let raw_env = match compose_env(server) {
        Ok(env) => env,
        Err(e) => return vec![format!("docker-compose.yml: services.server.{e}")],
    };
    let raw_command = match compose_command(server) {
        Ok(c) => c,
        Err(e) => return vec![e],
    };
    let env: Vec<(String, String)> = raw_env.iter().map(|(k, v)| (k.clone(), interpolate(v))).collect();
    let command: Vec<String> = raw_command.iter().map(|a| interpolate(a)).collect();
    problems.extend(argv_problems("docker-compose.yml services.server.command", &command, &env, true));
    // `docker compose run --rm server init --json` replaces the command and keeps the environment.
    problems.extend(argv_problems(
        "`docker compose run --rm server init --json`",
        &["init".into(), "--json".into()],
        &env,
        false,
    ));

    // The database: the compose PostgreSQL service, for the server and for `init` alike.
    let init = cli(&["init".into()]);
    match env_value(&env, "BILLING_DATABASE_URL") {
        Some(_) if !init.env.contains("BILLING_DATABASE_URL") => problems.push("`billing-server init` does not read BILLING_DATABASE_URL".into()),
        Some(_) => {}
        None => problems.push(
            "docker-compose.yml: services.server.environment must set BILLING_DATABASE_URL, so that `docker compose run server init` uses the compose database"
                .into(),
        ),
    }
    let url = flag_value(&command, "--database-url")
        .or(env_value(&env, "BILLING_DATABASE_URL"))
        .unwrap_or_default();
    match parse_pg_url(url) {
        None => problems.push(format!("docker-compose.yml: the server's database URL {url:?} is not a postgres:// URL")),
        Some(pg) => match services.get(&pg.host) {
            None => problems.push(format!("docker-compose.yml: the database URL's host `{}` is no compose service", pg.host)),
            Some(db) => {
                let db_env: Vec<(String, String)> = compose_env(db).unwrap_or_default();
                let user = env_value(&db_env, "POSTGRES_USER").unwrap_or("postgres");
                let password = env_value(&db_env, "POSTGRES_PASSWORD").unwrap_or_default();
                let database = env_value(&db_env, "POSTGRES_DB").unwrap_or(user);
                if !db.get("image").and_then(Yaml::as_str).is_some_and(|i| i.starts_with("postgres")) {
                    problems.push(format!("docker-compose.yml: service `{}` is not a postgres image", pg.host));
                }
                for (what, in_url, in_db) in [
                    ("user", pg.user.as_str(), user),
                    ("password", pg.password.as_str(), password),
                    ("database", pg.database.as_str(), database),
                    ("port", pg.port.as_str(), "5432"),
                ] {
                    if in_url != in_db {
                        problems.push(format!(
                            "docker-compose.yml: the server's database URL has {what} {in_url:?}, service `{}` has {in_db:?}",
                            pg.host
                        ));
                    }
                }
                let condition = server.get("depends_on").and_then(|d| d.get(&pg.host)).and_then(|d| d.get("condition"));
                if condition.and_then(Yaml::as_str) != Some("service_healthy") {
                    problems.push(format!(
                        "docker-compose.yml: the server must depend on `{}` with condition service_healthy",
                        pg.host
                    ));
                }
                let check = db.get("healthcheck").and_then(|h| h.get("test"));
                let probes = match check {
                    Some(Yaml::List(items)) => items.iter().any(|i| i.as_str() == Some("pg_isready")),
                    Some(Yaml::Str(s)) => s.contains("pg_isready"),
                    _ => false,
                };
                if !probes {
                    problems.push(format!("docker-compose.yml: service `{}` needs a pg_isready healthcheck", pg.host));
                }
            }
        },
    }

    // The JWT secret comes from the host's environment, never written in the file.
    let raw_secret = flag_value(&raw_command, "--jwt-secret").or(env_value(&raw_env, "BILLING_JWT_SECRET"));
    match raw_secret {
        Some(s) if s.starts_with("${") && s.ends_with('}') => {}
        other => problems.push(format!(
            "docker-compose.yml: the JWT secret must be `${{BILLING_JWT_SECRET…}}` from the host, not {other:?}"
        )),
    }

    // The published port is the one the server listens on, on all interfaces.
    let listen = flag_value(&command, "--listen").or(env_value(&env, "BILLING_LISTEN")).unwrap_or_default();
    let port = port_of(listen).unwrap_or_default();
    if !listen.starts_with("0.0.0.0:") {
        problems.push(format!("docker-compose.yml: the server must listen on 0.0.0.0, not {listen:?}"));
    }
    let published = match server.get("ports") {
        Some(Yaml::List(items)) => items.iter().filter_map(Yaml::as_str).any(|p| p.rsplit(':').next() == Some(port)),
        _ => false,
    };
    if !published {
        problems.push(format!("docker-compose.yml: the server's port {port} is not published (`ports`)"));
    }
    problems
}

// ---------------------------------------------------------------------------------------------
// The tests.

#[test]
fn dockerfile_command_and_environment_are_the_clis() {
    let problems = dockerfile_problems(&repo_file("Dockerfile"));
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn compose_command_environment_and_database_match_the_cli_and_the_db_service() {
    let problems = compose_problems(&repo_file("docker-compose.yml"));
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_misspelt_flag_or_variable_is_caught() {
    let compose = repo_file("docker-compose.yml");
    let dockerfile = repo_file("Dockerfile");
    let compose_cases = [
        ("\"--listen\"", "\"--lisen\"", "--lisen"),
        ("\"--public-url\"", "\"--public_url\"", "--public_url"),
        ("BILLING_JWT_SECRET: $", "BILLING_JWT_SECRT: $", "BILLING_JWT_SECRT"),
        ("@db:5432/billing", "@db:5432/billng", "database"),
        ("POSTGRES_PASSWORD: billing", "POSTGRES_PASSWORD: other", "password"),
        ("@db:5432", "@postgres:5432", "`postgres` is no compose service"),
        ("condition: service_healthy", "condition: service_started", "service_healthy"),
        ("BILLING_DATABASE_URL: postgres", "BILLING_DATABASE_URI: postgres", "BILLING_DATABASE_URI"),
    ];
    for (from, to, expected) in compose_cases {
        assert!(compose.contains(from), "docker-compose.yml has {from:?}");
        let problems = compose_problems(&compose.replacen(from, to, 1));
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{from:?} -> {to:?} is caught ({expected}): {problems:#?}"
        );
    }
    let dockerfile_cases = [
        ("CMD [\"--listen\"", "CMD [\"--listn\"", "--listn"),
        // The server's options belong before a command, not after `serve`.
        (
            "CMD [\"--listen\"",
            "CMD [\"serve\", \"--listen\"",
            "is not an option of `billing-server serve`",
        ),
        ("ENV BILLING_LISTEN=", "ENV BILLING_LISTN=", "BILLING_LISTN"),
        ("0.0.0.0:8080\"]", "0.0.0.0:80x\"]", "refuses"),
        ("USER billing", "USER root", "non-root"),
        ("EXPOSE 8080", "EXPOSE 8081", "EXPOSE"),
    ];
    for (from, to, expected) in dockerfile_cases {
        assert!(dockerfile.contains(from), "the Dockerfile has {from:?}");
        let problems = dockerfile_problems(&dockerfile.replacen(from, to, 1));
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{from:?} -> {to:?} is caught ({expected}): {problems:#?}"
        );
    }
}

/// The image's command line serves (in a directory of its own, as the image's WORKDIR: the
/// default `./billing.db` is created there), and its HEALTHCHECK, run as written with the port
/// the test server got, passes; with the server gone it fails.
#[test]
fn dockerfile_healthcheck_passes_against_the_images_command_and_fails_without_a_server() {
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        panic!("bash is needed (the image's health check is a bash command)");
    }
    let instructions = parse_dockerfile(&repo_file("Dockerfile"));
    let stage = final_stage(&instructions);
    let cmd: Vec<String> = exec_form(&stage.iter().rfind(|i| i.keyword == "CMD").expect("a CMD").args, "CMD").unwrap();
    let listen = flag_value(&cmd, "--listen").expect("the CMD sets --listen").to_string();
    let port = port_of(&listen).unwrap().to_string();
    // spawn_server adds `--listen 127.0.0.1:0`: the CMD without its own.
    let at = cmd.iter().position(|a| a == "--listen").unwrap();
    let args: Vec<&String> = cmd.iter().enumerate().filter(|(k, _)| *k != at && *k != at + 1).map(|(_, a)| a).collect();
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command
        .args(args)
        .current_dir(dir.path())
        .env_remove("BILLING_DATABASE_URL")
        .env_remove("BILLING_LISTEN");
    for (k, v) in dockerfile_env(stage) {
        if k != "BILLING_LISTEN" {
            command.env(k, v);
        }
    }
    let log = dir.path().join("server.log");
    let (mut child, addr) = process::spawn_server(command, &log);
    assert!(dir.path().join("billing.db").exists(), "the default database is in the working directory");
    let check: Vec<String> = healthcheck_argv(stage)
        .unwrap()
        .into_iter()
        .map(|a| a.replace(&format!("/dev/tcp/127.0.0.1/{port}"), &format!("/dev/tcp/127.0.0.1/{}", addr.port())))
        .collect();
    let run_check = || Command::new(&check[0]).args(&check[1..]).output().unwrap();
    let healthy = run_check();
    let _ = child.kill();
    let _ = child.wait();
    assert!(healthy.status.success(), "the health check passes against a serving server: {healthy:?}");
    let down = run_check();
    assert!(!down.status.success(), "the health check fails without a server: {down:?}");
}
