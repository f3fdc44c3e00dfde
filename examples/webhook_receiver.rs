//! A webhook receiver that checks signatures with `billing_core::webhook::verify`.
//!
//! ```sh
//! WEBHOOK_SECRET=whsec_... cargo run -p examples --example webhook_receiver -- 127.0.0.1:9000
//! ```
//!
//! Register `http://127.0.0.1:9000/` with `POST /api/v2/webhooks` (the answer holds the
//! `secret_key`). Each request is answered 200 when its `X-Webhook-Signature` verifies (5
//! minutes of tolerance) and 400 otherwise; deliveries are de-duplicated by
//! `X-Webhook-Delivery-ID`, since a delivery may arrive more than once (at-least-once).

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

/// Header names (lower-cased) and values.
type Headers = Vec<(String, String)>;

/// The headers and the raw body of one request.
fn read_request(stream: &mut TcpStream) -> Option<(Headers, Vec<u8>)> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
        let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let headers: Headers = head
            .lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        if raw.len() >= split + 4 + len {
            return Some((headers, raw[split + 4..split + 4 + len].to_vec()));
        }
    }
}

fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:9000".into());
    let secret = std::env::var("WEBHOOK_SECRET").expect("set WEBHOOK_SECRET to the endpoint's secret_key");
    let listener = TcpListener::bind(&addr)?;
    println!("listening on http://{addr}/");
    let mut seen = HashSet::new();
    for stream in listener.incoming() {
        let mut stream = stream?;
        let Some((headers, body)) = read_request(&mut stream) else { continue };
        let h = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        // Verify against the raw bytes, before parsing anything.
        let status = match billing_core::webhook::verify(h("x-webhook-signature"), &body, &secret, 300) {
            Ok(_) => {
                let delivery = h("x-webhook-delivery-id").unwrap_or("").to_string();
                let event: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                if seen.insert(delivery.clone()) {
                    println!(
                        "{} {} {} (delivery {delivery})",
                        h("x-webhook-event").unwrap_or("?"),
                        h("x-webhook-entity-id").unwrap_or("?"),
                        event["status"]
                    );
                } else {
                    println!("duplicate delivery {delivery}, ignored");
                }
                "200 OK"
            }
            Err(e) => {
                println!("refused: {e}");
                "400 Bad Request"
            }
        };
        write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")?;
    }
    Ok(())
}
