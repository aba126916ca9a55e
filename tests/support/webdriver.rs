//! A small WebDriver client for Debian's `chromedriver` driving a headless `chromium`: start
//! the driver, open a session, navigate, find elements, type keys, run a script, take a
//! screenshot. W3C WebDriver over HTTP with reqwest, which the crate already depends on.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The key WebDriver names an element reference with.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A running `chromedriver` and one browser session; both end on drop.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

impl Browser {
    /// Starts chromedriver and a headless chromium. Fails the test loudly when either is
    /// missing.
    pub async fn start() -> Self {
        for program in ["chromium", "chromedriver"] {
            assert!(
                Command::new("sh")
                    .args(["-c", &format!("command -v {program}")])
                    .stdout(Stdio::null())
                    .status()
                    .unwrap()
                    .success(),
                "this test needs `{program}`\nhint: apt-get install -y chromium chromium-driver (or run .ci/run)"
            );
        }
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        aci::tls::install_provider();
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = http.get(format!("{base}/status")).send().await;
            if let Ok(response) = ready
                && let Ok(status) = response.json::<Value>().await
                && status["value"]["ready"] == Value::Bool(true)
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1400,1000", "--hide-scrollbars"]
            }
        }}});
        let created: Value = http
            .post(format!("{base}/session"))
            .json(&capabilities)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {created}"))
            .to_owned();
        Browser {
            driver,
            base,
            session,
            http,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut request = self.http.request(method, &url);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        if let Some(error) = answer["value"].get("error") {
            panic!("webdriver {path}: {error}: {}", answer["value"]["message"]);
        }
        answer["value"].clone()
    }

    /// Opens `url` and waits for the page to load.
    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// The current URL.
    pub async fn url(&self) -> String {
        self.call(reqwest::Method::GET, "/url", None)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The document's title.
    pub async fn title(&self) -> String {
        self.call(reqwest::Method::GET, "/title", None)
            .await
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Runs `script` (a function body; `arguments` are `args`) and returns its value.
    pub async fn eval(&self, script: &str, args: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// The id of the first element matching `css`.
    pub async fn find(&self, css: &str) -> String {
        let found = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found[ELEMENT].as_str().unwrap().to_owned()
    }

    /// Clicks the first element matching `css`.
    pub async fn click(&self, css: &str) {
        let element = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .await;
    }

    /// Types `text` into the first element matching `css`.
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Presses and releases `key` on the page, as a person at the keyboard.
    pub async fn press(&self, key: &str) {
        let actions = json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}
        ]}]});
        self.call(reqwest::Method::POST, "/actions", Some(actions))
            .await;
    }

    /// Waits until `script` returns true, or fails with `what` after 30 seconds.
    pub async fn wait_for(&self, script: &str, args: Value, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.eval(script, args.clone()).await == Value::Bool(true) {
                return;
            }
            assert!(Instant::now() < deadline, "waited 30 s for {what}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Saves a screenshot of the viewport as a PNG file.
    pub async fn screenshot(&self, path: &Path) {
        let encoded = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64_decode(encoded.as_str().unwrap());
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // End the session first, so chromedriver closes its browser, then the driver. Plain
        // blocking HTTP: this runs in a panic too, where no runtime may be polled.
        let address = self.base.trim_start_matches("http://").to_owned();
        if let Ok(mut stream) = std::net::TcpStream::connect(&address) {
            use std::io::{Read, Write};
            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
            let request = format!(
                "DELETE /session/{} HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                self.session
            );
            if stream.write_all(request.as_bytes()).is_ok() {
                let mut answer = Vec::new();
                let _ = stream.read_to_end(&mut answer);
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64, as WebDriver sends screenshots.
fn base64_decode(text: &str) -> Vec<u8> {
    let text: String = text.split_ascii_whitespace().collect();
    data_encoding::BASE64
        .decode(text.as_bytes())
        .unwrap_or_else(|error| panic!("not base64: {error}"))
}
