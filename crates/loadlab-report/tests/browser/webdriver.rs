//! Just enough WebDriver to open a page in headless Chromium and look at it: chromedriver on a
//! free loopback port, one blocking HTTP/1.1 request per command over `std::net::TcpStream`,
//! JSON by serde_json. Every wait is bounded; chromedriver is killed by its PID when dropped,
//! the browser session deleted first.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long one WebDriver command may take (a screenshot of a tall page is the slowest).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// How long chromedriver may take to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(30);

pub type Result<T> = std::result::Result<T, String>;

/// A running chromedriver, killed (by PID) when dropped.
pub struct Driver {
    child: Child,
    addr: SocketAddr,
}

impl Driver {
    /// Starts chromedriver on a free loopback port (bound once to port 0, then released) and
    /// waits until it says it is ready.
    pub fn start(chromedriver: &Path, log: &Path) -> Result<Driver> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", chromedriver.display()))?;
        let driver = Driver {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok((200, status)) = driver.call("GET", "/status", None) {
                if status["value"]["ready"] == json!(true) {
                    return Ok(driver);
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "chromedriver was not ready within {START_TIMEOUT:?}; see {}",
                    log.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A headless Chromium session that keeps to itself: no sandbox (containers), no GPU, no
    /// background traffic, a fresh profile, and the browser's console log kept.
    pub fn session(&self, chromium: &Path, profile: &Path) -> Result<Session<'_>> {
        let args = [
            "--headless=new".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--hide-scrollbars".into(),
            "--force-device-scale-factor=1".into(),
            "--window-size=1280,900".into(),
            format!("--user-data-dir={}", profile.display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "pageLoadStrategy": "normal",
            "timeouts": {"pageLoad": 30_000, "script": 15_000, "implicit": 0},
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let value = self.ok("POST", "/session", Some(&caps))?;
        let id = value["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no session id in {value}"))?
            .to_string();
        Ok(Session { driver: self, id })
    }

    /// A command that must succeed; its `value`.
    fn ok(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        match self.call(method, path, body)? {
            (200, reply) => Ok(reply["value"].clone()),
            (status, reply) => Err(format!("{method} {path}: HTTP {status}: {reply}")),
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, Value)> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut stream = TcpStream::connect_timeout(&self.addr, COMMAND_TIMEOUT)
            .map_err(|e| format!("connect to chromedriver: {e}"))?;
        stream.set_read_timeout(Some(COMMAND_TIMEOUT)).ok();
        stream.set_write_timeout(Some(COMMAND_TIMEOUT)).ok();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .map_err(|e| format!("{method} {path}: {e}"))?;
        read_response(&mut stream).map_err(|e| format!("{method} {path}: {e}"))
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // By its PID, never by name: other chromedrivers on this machine are not ours.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Status and JSON body of an HTTP/1.1 response, read by its length or its chunks: the
/// connection may stay open after it (chromedriver does not always close it at once).
fn read_response(stream: &mut TcpStream) -> Result<(u16, Value)> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let mut read_more = |raw: &mut Vec<u8>| -> Result<bool> {
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        raw.extend_from_slice(&buf[..n]);
        Ok(n > 0)
    };
    let split = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if !read_more(&mut raw)? {
            return Err("connection closed before the headers ended".into());
        }
    };
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status")?;
    // Header names end at the colon; chromedriver writes no space after it.
    let header = |name: &str| {
        head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            (n.trim() == name).then(|| v.trim().to_string())
        })
    };
    let start = split + 4;
    let body = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            if let Ok(body) = dechunk(&raw[start..]) {
                break body;
            }
            if !read_more(&mut raw)? {
                return Err("connection closed inside a chunked body".into());
            }
        }
    } else if let Some(length) = header("content-length") {
        let length: usize = length.parse().map_err(|_| "bad content-length")?;
        while raw.len() < start + length {
            if !read_more(&mut raw)? {
                return Err("connection closed inside the body".into());
            }
        }
        raw[start..start + length].to_vec()
    } else {
        while read_more(&mut raw)? {}
        raw[start..].to_vec()
    };
    let value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).map_err(|e| format!("reply is not JSON: {e}"))?
    };
    Ok((status, value))
}

fn dechunk(mut data: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("bad chunk")?;
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| "bad chunk size")?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(data.get(..size).ok_or("short chunk")?);
        data = data.get(size + 2..).ok_or("short chunk")?;
    }
}

/// One browser session, deleted when dropped (before its driver is killed).
pub struct Session<'d> {
    driver: &'d Driver,
    id: String,
}

impl Session<'_> {
    fn path(&self, rest: &str) -> String {
        format!("/session/{}/{rest}", self.id)
    }

    /// Opens a URL and waits (up to the page-load timeout) for it to load.
    pub fn goto(&self, url: &str) -> Result<()> {
        self.driver
            .ok("POST", &self.path("url"), Some(&json!({ "url": url })))
            .map(drop)
    }

    /// Runs a script in the page (`return ...` gives the result).
    pub fn execute(&self, script: &str) -> Result<Value> {
        let body = json!({"script": script, "args": []});
        self.driver
            .ok("POST", &self.path("execute/sync"), Some(&body))
    }

    /// The browser's console messages since the last call, as `{level, message}` objects.
    pub fn browser_log(&self) -> Result<Vec<Value>> {
        let body = json!({"type": "browser"});
        let value = self.driver.ok("POST", &self.path("se/log"), Some(&body))?;
        Ok(value.as_array().cloned().unwrap_or_default())
    }

    pub fn set_window(&self, width: u32, height: u32) -> Result<()> {
        let body = json!({"width": width, "height": height});
        self.driver
            .ok("POST", &self.path("window/rect"), Some(&body))
            .map(drop)
    }

    /// A PNG of the window.
    pub fn screenshot(&self) -> Result<Vec<u8>> {
        use base64::Engine as _;
        let value = self.driver.ok("GET", &self.path("screenshot"), None)?;
        let text = value.as_str().ok_or("screenshot is not a string")?;
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("screenshot is not base64: {e}"))
    }
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        let _ = self
            .driver
            .call("DELETE", &format!("/session/{}", self.id), None);
    }
}
