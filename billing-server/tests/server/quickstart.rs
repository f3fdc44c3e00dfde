//! The README's walk ("From nothing to money"), run as written by bash in an empty directory:
//! the only changes are the test build of the binaries in place of `target/release/…` (so its
//! `cargo build --release` line is left out) and free ports in place of 8080 and 9000. The
//! invoice and the link must be paid, and the receiver must have verified one PAYMENT_SUCCEEDED
//! webhook per payment.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_billing-server");
const BUILD: &str = "cargo build --release -p billing-server -p examples";

/// The ```sh block under `## From nothing to money`.
fn walk_block() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let section = readme.split("## From nothing to money").nth(1).expect("the README has the walk");
    let block = section.split("```sh\n").nth(1).expect("a sh block").split("```").next().unwrap();
    block.to_string()
}

/// The webhook receiver example, built beside this test's binary (`cargo test --workspace`
/// builds it already; built here when the test runs alone).
fn receiver() -> PathBuf {
    let path = Path::new(BIN).parent().unwrap().join("examples").join("webhook_receiver");
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "examples", "--example", "webhook_receiver"])
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .status()
            .expect("cargo");
        assert!(status.success(), "building the webhook receiver example failed");
    }
    assert!(path.exists(), "no receiver at {}", path.display());
    path
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn the_readme_walk_takes_two_payments_and_their_webhooks_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let (port, hook_port) = (free_port(), free_port());
    let block = walk_block();
    for expected in [
        BUILD,
        "target/release/billing-server",
        "target/release/examples/webhook_receiver",
        "localhost:8080",
        "127.0.0.1:9000",
    ] {
        assert!(block.contains(expected), "the walk no longer has {expected:?}:\n{block}");
    }
    let script = block
        .replace(BUILD, "true")
        .replace("target/release/billing-server", BIN)
        .replace("target/release/examples/webhook_receiver", receiver().to_str().unwrap())
        .replace("localhost:8080", &format!("localhost:{port}"))
        .replace("127.0.0.1:9000", &format!("127.0.0.1:{hook_port}"));
    let child = Command::new("timeout")
        .args(["120", "bash", "-c", &script])
        .current_dir(dir.path())
        .env("BILLING_LISTEN", format!("127.0.0.1:{port}"))
        .env_remove("BILLING_DATABASE_URL")
        .env_remove("BILLING_JWT_SECRET")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: whatever the script leaves running is stopped below.
        .process_group(0)
        .spawn()
        .expect("bash and timeout");
    let pgid = child.id() as i32;
    let out = child.wait_with_output().unwrap();
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the walk failed ({:?}):\n{stdout}\n{stderr}", out.status);

    // Two pay calls, each answered paid.
    let answers: Vec<serde_json::Value> = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 2, "two pay answers:\n{stdout}");
    for a in &answers {
        assert_eq!(a["status"], "paid", "{a}\n{stdout}\n{stderr}");
        assert_eq!(a["message"], "APPROVED", "{a}");
    }
    assert!(
        stdout.contains(&format!("the invoice's pay page: http://127.0.0.1:{port}/pay/invoices/")),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("the payment link: http://127.0.0.1:{port}/pay/")), "{stdout}");

    // The receiver verified one PAYMENT_SUCCEEDED per payment, and refused nothing.
    let log = std::fs::read_to_string(dir.path().join("webhooks.log")).unwrap();
    let paid = log.lines().filter(|l| l.starts_with("PAYMENT_SUCCEEDED ")).count();
    assert_eq!(paid, 2, "{log}");
    assert!(!log.contains("refused"), "{log}");
    assert!(dir.path().join("walk.db").exists() && dir.path().join("creds.json").exists());
}
