//! `/mcp`, the tool server, driven by the official MCP client SDK (Python `mcp`, run as
//! `tests/server/mcp_client.py`: `.ci/run` installs it; without it these tests fail when `CI` is
//! set and print a loud SKIPPED otherwise): the tools' names and input schemas, every family of
//! tools against the real server, the description as a resource without a credential, and a
//! branch-scoped key that cannot reach another branch's data. Here too, over raw HTTP: a tool
//! call with a wrong or missing key is a JSON-RPC error and writes nothing.

use crate::common::fixtures::*;
use crate::common::TestServer;
use hyper::Method;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

/// Whether Python with the `mcp` SDK is here. Without it: a failure under CI, a loud SKIPPED
/// otherwise (`false`).
fn mcp_sdk_available(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import mcp.client.streamable_http"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{test}: python3 with the mcp SDK is needed (pip install mcp; .ci/run installs it)");
    }
    eprintln!("\n*** SKIPPED {test}: python3 with the mcp SDK is not installed (pip install mcp) ***\n");
    false
}

#[test]
fn the_official_client_sdk_drives_every_tool_family() {
    if !mcp_sdk_available("mcp::the_official_client_sdk_drives_every_tool_family") {
        return;
    }
    let srv = TestServer::sqlite();
    let main_branch = srv.branch_id();
    let branch_b = branch(&srv, "Branch B");
    let scoped = scoped_key(&srv, &[&branch_b], &branch_b);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/server/mcp_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .args([&srv.base, &srv.key, &scoped, &branch_b, &main_branch])
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the MCP client failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("mcp client: all checks passed"), "{stdout}");
    // What the tools did is in the store, as the API shows it.
    let consumers = ok(srv.get("/api/v2/consumers?search_term=sara.mcp"));
    assert_eq!(consumers["data"].as_array().unwrap().len(), 1, "create_customer wrote one consumer");
}

fn rpc(srv: &TestServer, auth: Option<&str>, body: Value) -> crate::common::Resp {
    let mut headers = vec![("content-type", "application/json"), ("accept", "application/json, text/event-stream")];
    let bearer;
    if let Some(a) = auth {
        bearer = format!("Bearer {a}");
        headers.push(("authorization", bearer.as_str()));
    }
    srv.raw(Method::POST, "/mcp", &headers, Some(serde_json::to_vec(&body).unwrap()))
}

#[test]
fn a_tool_call_without_a_valid_key_is_a_protocol_error_and_writes_nothing() {
    let srv = TestServer::sqlite();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "create_customer", "arguments": {"name": "Nobody"}}});
    for auth in [None, Some("d3Jvbmc6a2V5"), Some("not base64!")] {
        let r = srv.unchanged(|| rpc(&srv, auth, call.clone()));
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.body["id"], 7);
        assert_eq!(r.body["error"]["code"], -32001, "{auth:?}: {}", r.text);
        assert!(r.body.get("result").is_none());
    }
    // With the key the same call runs.
    let r = rpc(&srv, Some(&srv.key), call);
    assert_eq!(r.body["result"]["isError"], false, "{}", r.text);
    let created: Value = serde_json::from_str(r.body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(ok(srv.get(&format!("/api/v2/consumers/{}", created["id"].as_str().unwrap())))["name"], "Nobody");
}

#[test]
fn the_description_is_readable_without_a_key() {
    let srv = TestServer::sqlite();
    let r = rpc(
        &srv,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "openapi://billing/openapi.json"}}),
    );
    let text = r.body["result"]["contents"][0]["text"].as_str().expect(&r.text);
    let doc: Value = serde_json::from_str(text).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let tools = rpc(&srv, None, json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let names: Vec<&str> = tools.body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"refund_payment") && names.contains(&"search_api_docs"), "{names:?}");
}

#[test]
fn the_body_limit_holds_on_the_tool_server() {
    let srv = TestServer::sqlite_with(|c| c.body_limit = 2048);
    let big = "x".repeat(4096);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "create_customer", "arguments": {"name": "Big", "comment": big}}});
    let key = srv.key.clone();
    let r = srv.unchanged(|| rpc(&srv, Some(&key), call));
    assert_eq!(r.status, 413, "{}", r.text);
    assert_eq!(r.body["error"]["code"], "PAYLOAD_TOO_LARGE");
}
