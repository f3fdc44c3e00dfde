//! Starting a `billing-server` process on a port it picks itself, for the process-level tests.
//!
//! The server binds `127.0.0.1:0` and the test reads the bound address from its log line
//! ("billing-server listening address=127.0.0.1:PORT"), as `tests/cli.rs` does: a test that picked
//! a free port itself and released it for the server could lose it to another test meanwhile.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Log filter of the servers: warnings, and the info line that tells the bound address.
const LOG_FILTER: &str = "warn,billing_server=info";

/// How long a server may take to bind its port.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(60);

/// Spawns `cmd` (a `billing-server` serve command; this adds `--listen 127.0.0.1:0`) with its
/// output written to `log`, and returns the process and the address it listens on. Panics, with
/// the log, when the process exits or stays silent for a minute before it listens.
pub fn spawn_server(mut cmd: Command, log: &Path) -> (Child, SocketAddr) {
    let mut file = File::create(log).expect("create the server log");
    let mut child = cmd
        .args(["--listen", "127.0.0.1:0"])
        .env("BILLING_LOG", LOG_FILTER)
        .env("NO_COLOR", "1")
        // The tests' webhook receivers listen on 127.0.0.1.
        .env("BILLING_WEBHOOK_ALLOW_PRIVATE", "true")
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start billing-server");
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = mpsc::channel();
    // Copies the whole log to the file; the address is sent once it is read.
    let copier = std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = writeln!(file, "{line}");
            if tx.is_some() {
                if let Some(addr) = listening_address(&line) {
                    let _ = tx.take().unwrap().send(addr);
                }
            }
        }
    });
    match rx.recv_timeout(LISTEN_TIMEOUT) {
        Ok(addr) => (child, addr),
        Err(e) => {
            let _ = child.kill();
            let status = child.wait();
            // The copying thread ends with the process's output.
            let _ = copier.join();
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let why = match e {
                mpsc::RecvTimeoutError::Timeout => format!("did not log where it listens within {LISTEN_TIMEOUT:?}"),
                mpsc::RecvTimeoutError::Disconnected => "ended without logging where it listens".to_string(),
            };
            panic!("billing-server {why} ({status:?}); its log:\n{text}");
        }
    }
}

/// The `address` field of the "billing-server listening" log line.
fn listening_address(line: &str) -> Option<SocketAddr> {
    let line = strip_ansi(line);
    if !line.contains("billing-server listening") {
        return None;
    }
    let (_, rest) = line.split_once("address=")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// `line` without terminal colour sequences (ESC '[' ... final letter).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
