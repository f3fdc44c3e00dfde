//! The README's "Quick start with curl" block, run as written by bash in an empty directory:
//! the only changes are the test build of the binary in place of `cargo run --release -p
//! billing-server` and a free port in place of 8080 (`BILLING_LISTEN` for the server). Every
//! call must print one JSON answer that is not an error.

use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_billing-server");

/// The ```sh block under `## Quick start with curl`.
fn quick_start_block() -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let section = readme.split("## Quick start with curl").nth(1).expect("the README has a quick start");
    let block = section.split("```sh\n").nth(1).expect("a sh block").split("```").next().unwrap();
    block.to_string()
}

#[test]
fn the_readme_quick_start_runs_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let block = quick_start_block();
    assert!(
        block.contains("cargo run --release -p billing-server") && block.contains("localhost:8080"),
        "{block}"
    );
    let script = block
        .replace("cargo run --release -p billing-server --", BIN)
        .replace("cargo run --release -p billing-server", BIN)
        .replace("localhost:8080", &format!("localhost:{port}"));
    let calls = script.lines().filter(|l| l.trim_start().starts_with("curl -s ")).count();
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
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the block failed ({:?}):\n{stdout}\n{stderr}", out.status);
    assert!(started.elapsed() < Duration::from_secs(120));
    let answers: Vec<Value> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not one JSON answer per line ({e}): {l:?}\n{stdout}")))
        .collect();
    assert_eq!(answers.len(), calls, "one answer per call:\n{stdout}\n{stderr}");
    for a in &answers {
        assert!(a.get("error").is_none() && a.get("detail").is_none(), "an error answer: {a}\n{stdout}");
    }
    assert_eq!(answers[1]["name"], "Sara Al-Harbi", "{stdout}");
    assert_eq!(answers[2]["data"][0]["name"], "Sara Al-Harbi", "the search finds her: {stdout}");
    assert_eq!(answers[3]["name"], "Gym membership", "{stdout}");
    assert!(dir.path().join("creds.json").exists() && dir.path().join("billing.db").exists());
    // `kill %1` stopped the server: the port is free again.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(Instant::now() < deadline, "the server still listens after the block");
        std::thread::sleep(Duration::from_millis(100));
    }
}
