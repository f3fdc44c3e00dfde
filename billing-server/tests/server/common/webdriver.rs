//! A small W3C WebDriver client over the hyper client the tests already use (no browser-driving
//! crate in the build): starts `chromedriver` on a port it picks, opens one headless Chromium
//! session, and offers the few commands the browser test needs.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Method;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The W3C key of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where Debian's `chromium` and `chromium-driver` packages put them (or `CHROME_BIN` and
/// `CHROMEDRIVER`). `None` when either is missing.
pub fn find_browser() -> Option<(PathBuf, PathBuf)> {
    let pick = |var: &str, names: &[&str]| -> Option<PathBuf> {
        if let Ok(p) = std::env::var(var) {
            return Some(PathBuf::from(p)).filter(|p| p.exists());
        }
        let path = std::env::var_os("PATH")?;
        names
            .iter()
            .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
            .find(|p| p.exists())
    };
    Some((
        pick("CHROME_BIN", &["chromium", "chromium-browser", "google-chrome"])?,
        pick("CHROMEDRIVER", &["chromedriver"])?,
    ))
}

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    rt: tokio::runtime::Runtime,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium `width`×`height` window.
    pub fn start(chromium: &Path, chromedriver: &Path, width: u32, height: u32) -> Browser {
        let mut driver = Command::new(chromedriver)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let out = driver.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("ChromeDriver was started successfully on port ") {
                    let _ = tx.send(port.trim_end_matches('.').to_string());
                }
            }
        });
        let port = rx.recv_timeout(Duration::from_secs(30)).expect("chromedriver tells its port");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let client = Client::builder(TokioExecutor::new()).build_http();
        let mut b = Browser {
            driver,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            rt,
            client,
        };
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.to_string_lossy(),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--no-first-run", "--hide-scrollbars", format!("--window-size={width},{height}")]
            }
        }}});
        let v = b.cmd(Method::POST, "/session", Some(caps));
        b.session = v["sessionId"].as_str().expect("a session").to_string();
        b
    }

    /// One WebDriver command; returns its `value`, panics on a WebDriver error.
    pub fn cmd(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let m = method.clone();
        self.try_cmd(method, path, body).unwrap_or_else(|e| panic!("WebDriver {m} {path}: {e}"))
    }

    /// One WebDriver command: its `value`, or the error it answered.
    pub fn try_cmd(&self, method: Method, path: &str, body: Option<Value>) -> Result<Value, String> {
        let req = hyper::Request::builder()
            .method(method.clone())
            .uri(format!("{}{}", self.base, path))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.map(|b| b.to_string()).unwrap_or_default())))
            .unwrap();
        let (status, v) = self.rt.block_on(async {
            let resp = tokio::time::timeout(Duration::from_secs(60), self.client.request(req))
                .await
                .expect("WebDriver answers within a minute")
                .expect("WebDriver request");
            let status = resp.status().as_u16();
            let bytes = resp.into_body().collect().await.unwrap().to_bytes();
            (status, serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null))
        });
        match status {
            200 => Ok(v["value"].clone()),
            _ => Err(format!("{status} {v}")),
        }
    }

    fn s(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub fn goto(&self, url: &str) {
        self.cmd(Method::POST, &self.s("/url"), Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.cmd(Method::GET, &self.s("/url"), None).as_str().unwrap_or_default().to_string()
    }

    pub fn find(&self, css: &str) -> String {
        let v = self.cmd(Method::POST, &self.s("/element"), Some(json!({"using": "css selector", "value": css})));
        v[ELEMENT].as_str().expect("element").to_string()
    }

    pub fn type_into(&self, css: &str, text: &str) {
        let el = self.find(css);
        self.cmd(Method::POST, &self.s(&format!("/element/{el}/clear")), Some(json!({})));
        self.cmd(Method::POST, &self.s(&format!("/element/{el}/value")), Some(json!({ "text": text })));
    }

    pub fn click(&self, css: &str) {
        let el = self.find(css);
        self.cmd(Method::POST, &self.s(&format!("/element/{el}/click")), Some(json!({})));
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.cmd(Method::POST, &self.s("/execute/sync"), Some(json!({"script": script, "args": args})))
    }

    /// Polls `script` until it returns something truthy; panics with `what` after `secs`.
    pub fn wait_for(&self, what: &str, secs: u64, script: &str) -> Value {
        let until = Instant::now() + Duration::from_secs(secs);
        loop {
            // A page that is navigating may not run scripts for a moment.
            let v = self
                .try_cmd(Method::POST, &self.s("/execute/sync"), Some(json!({"script": script, "args": []})))
                .unwrap_or(Value::Null);
            if !(v.is_null() || v == json!(false) || v == json!("") || v == json!(0)) {
                return v;
            }
            assert!(Instant::now() < until, "timed out waiting for {what} (at {})", self.url());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn set_window(&self, width: u32, height: u32) {
        self.cmd(Method::POST, &self.s("/window/rect"), Some(json!({"width": width, "height": height})));
    }

    /// Switches into the iframe matched by `css` (`None`: back to the top page).
    pub fn frame(&self, css: Option<&str>) {
        let id = match css {
            Some(css) => json!({ ELEMENT: self.find(css) }),
            None => Value::Null,
        };
        self.cmd(Method::POST, &self.s("/frame"), Some(json!({ "id": id })));
    }

    /// A PNG of the viewport, saved at `path`.
    pub fn screenshot(&self, path: &Path) {
        use base64::Engine;
        let v = self.cmd(Method::GET, &self.s("/screenshot"), None);
        let png = base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let req = hyper::Request::builder()
                .method(Method::DELETE)
                .uri(format!("{}/session/{}", self.base, self.session))
                .body(Full::new(Bytes::new()))
                .unwrap();
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(Duration::from_secs(10), self.client.request(req)).await });
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
