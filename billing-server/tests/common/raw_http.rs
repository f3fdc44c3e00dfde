//! Reading one HTTP/1.1 request off a socket, for the tests' webhook receivers.

use std::io::Read;
use std::net::TcpStream;

/// The request's head (lower-cased) and its `Content-Length` body; `None` when the peer closes
/// or fails before a whole request arrived.
pub fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..i]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if raw.len() >= i + 4 + len {
                let body = raw[i + 4..i + 4 + len].to_vec();
                return Some((head, body));
            }
        }
    }
}
