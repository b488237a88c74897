//! A small HTTP/1.1 server on 127.0.0.1 (or another loopback address) for the
//! HTTP-mode tests, plain or over TLS with a self-signed certificate. Each request
//! is recorded, then answered by a script (the nth request gets the nth reply;
//! the last one repeats) or a handler, over one connection that is closed after
//! the reply. Replies can also misbehave on purpose: be slow, close at once, or
//! cut the body short; a hang-up server closes every connection before a byte is
//! read. Dropping the server stops it and checks the number of requests if one
//! was expected.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// As sent: a path, or an absolute URL when the server acts as a proxy.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Debug)]
pub enum Reply {
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Declares `declared` bytes of body, sends `body` (fewer), then closes.
    CutOff { declared: usize, body: Vec<u8> },
    /// Closes the connection without sending a byte.
    Close,
    /// Resets the connection (RST: SO_LINGER 0) without sending a byte; over TLS, as
    /// [`Reply::Close`].
    Reset,
    /// Waits, then replies.
    Slow(Duration, Box<Reply>),
    /// Writes these bytes as they are (status line, headers, body), then closes.
    Raw(Vec<u8>),
}

impl Reply {
    pub fn status(status: u16) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn ok(body: &str) -> Reply {
        Reply::status(200).body(body.as_bytes())
    }

    pub fn header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }

    pub fn body(mut self, bytes: &[u8]) -> Reply {
        if let Reply::Status { body, .. } = &mut self {
            *body = bytes.to_vec();
        }
        self
    }
}

type Handler = dyn Fn(&Request, usize) -> Reply + Send + Sync;

/// A self-signed certificate for 127.0.0.1 and localhost (valid until 2126),
/// made with `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1`.
pub const TEST_CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBnTCCAUOgAwIBAgIUG73lrawmXGAyHa07Ca834wXgVJ8wCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKcmV0cnkgdGVzdDAgFw0yNjEyMDMwNzQ3MjhaGA8yMTI2MTEw
OTA3NDcyOFowFTETMBEGA1UEAwwKcmV0cnkgdGVzdDBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABLRplc3stQGa4+CngesSv/WrA6osRo2Ay15rSPLSGs5NMrLt6ogz
tGztdqIbWa5h2kdZNSiRzJ3lgYlfKSlCio+jbzBtMB0GA1UdDgQWBBQHm+TDeH0I
Pejb7BbcoQvy5GjFdTAfBgNVHSMEGDAWgBQHm+TDeH0IPejb7BbcoQvy5GjFdTAP
BgNVHRMBAf8EBTADAQH/MBoGA1UdEQQTMBGHBH8AAAGCCWxvY2FsaG9zdDAKBggq
hkjOPQQDAgNIADBFAiBOT8F7ha63QjZrIe68xshoKd1DLFm4uJB7Kt5tZD0DcQIh
ALJ8XgUdO912HfxR21irAaq/Eg8JpDaMLzk3iEkjRWKz
-----END CERTIFICATE-----
";

pub const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg24R01HabPwRnGsqB
+aVF+y/O/jyoxwYQJsFbdZBT6XOhRANCAAS0aZXN7LUBmuPgp4HrEr/1qwOqLEaN
gMtea0jy0hrOTTKy7eqIM7Rs7XaiG1muYdpHWTUokcyd5YGJXykpQoqP
-----END PRIVATE KEY-----
";

#[derive(Clone)]
enum Mode {
    Plain,
    Tls(Arc<rustls::ServerConfig>),
    /// Close every connection at once, before reading anything.
    HangUp,
}

pub struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    expected: Option<usize>,
}

impl Server {
    /// Answers the nth request with `replies[n]`, the last reply repeating.
    pub fn script(replies: Vec<Reply>) -> Server {
        assert!(!replies.is_empty());
        Server::handler(move |_, n| replies[n.min(replies.len() - 1)].clone())
    }

    pub fn handler(handler: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Server {
        Server::start(Mode::Plain, Arc::new(handler))
    }

    /// Like `script`, over TLS with the self-signed test certificate.
    pub fn tls_script(replies: Vec<Reply>) -> Server {
        Server::start(
            Mode::Tls(tls_config()),
            Arc::new(move |_, n| replies[n.min(replies.len() - 1)].clone()),
        )
    }

    /// Like `tls_script`, with the caller's TLS configuration (its own
    /// certificates, client authentication).
    pub fn tls_with(config: Arc<rustls::ServerConfig>, replies: Vec<Reply>) -> Server {
        assert!(!replies.is_empty());
        Server::start(
            Mode::Tls(config),
            Arc::new(move |_, n| replies[n.min(replies.len() - 1)].clone()),
        )
    }

    /// Accepts connections and closes each at once; every connection is a hit.
    pub fn hang_up() -> Server {
        Server::start(Mode::HangUp, Arc::new(|_, _| Reply::Close))
    }

    /// Like `script`, listening on `addr` (a loopback address; port 0 for any port);
    /// `Err` when it is taken.
    pub fn script_at(addr: SocketAddr, replies: Vec<Reply>) -> std::io::Result<Server> {
        assert!(!replies.is_empty());
        assert!(
            addr.ip().is_loopback(),
            "test servers listen on loopback only"
        );
        let listener = TcpListener::bind(addr)?;
        let handler: Arc<Handler> = Arc::new(move |_, n| replies[n.min(replies.len() - 1)].clone());
        Ok(Server::serve(listener, Mode::Plain, handler))
    }

    fn start(mode: Mode, handler: Arc<Handler>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        Server::serve(listener, mode, handler)
    }

    fn serve(listener: TcpListener, mode: Mode, handler: Arc<Handler>) -> Server {
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let requests = Arc::clone(&requests);
            let accept = move || listener.accept().map(|(stream, _)| stream);
            accept_until(&stop, accept, move |stream| {
                let requests = Arc::clone(&requests);
                let handler = Arc::clone(&handler);
                let mode = mode.clone();
                std::thread::spawn(move || serve(mode, stream, &requests, &*handler));
            })
        };
        Server {
            addr,
            requests,
            stop,
            thread: Some(thread),
            expected: None,
        }
    }

    /// Checks, when dropped, that exactly `n` requests arrived.
    pub fn expect_hits(mut self, n: usize) -> Server {
        self.expected = Some(n);
        self
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.addr.port())
    }

    pub fn https_url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    pub fn hits(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(n) = self.expected.filter(|_| !std::thread::panicking()) {
            assert_eq!(self.hits(), n, "requests received by the test server");
        }
    }
}

/// The same server on a Unix socket at `path` (removed when dropped).
pub struct UnixServer {
    path: std::path::PathBuf,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl UnixServer {
    pub fn script(path: &std::path::Path, replies: Vec<Reply>) -> UnixServer {
        assert!(!replies.is_empty());
        let listener = std::os::unix::net::UnixListener::bind(path).expect("bind a Unix socket");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(move |_, n| replies[n.min(replies.len() - 1)].clone());
        let thread = {
            let requests = Arc::clone(&requests);
            let accept = move || listener.accept().map(|(stream, _)| stream);
            accept_until(&stop, accept, move |mut stream| {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = exchange(&mut stream, &requests, &*handler);
            })
        };
        UnixServer {
            path: path.to_path_buf(),
            requests,
            stop,
            thread: Some(thread),
        }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for UnixServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = std::os::unix::net::UnixStream::connect(&self.path);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A thread that accepts connections and hands each to `each` until `stop` is set
/// (the owner sets it, then connects once to wake the accept).
fn accept_until<S: Send + 'static>(
    stop: &Arc<AtomicBool>,
    accept: impl Fn() -> std::io::Result<S> + Send + 'static,
    each: impl Fn(S) + Send + 'static,
) -> JoinHandle<()> {
    let stop = Arc::clone(stop);
    std::thread::spawn(move || {
        loop {
            let conn = accept();
            if stop.load(Ordering::SeqCst) {
                break;
            }
            if let Ok(conn) = conn {
                each(conn);
            }
        }
    })
}

fn serve(mode: Mode, stream: TcpStream, requests: &Mutex<Vec<Request>>, handler: &Handler) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    match mode {
        Mode::Plain => {
            let mut stream = stream;
            if exchange(&mut stream, requests, handler) == Some(Ended::Reset) {
                let linger = nix::libc::linger {
                    l_onoff: 1,
                    l_linger: 0,
                };
                let _ = nix::sys::socket::setsockopt(
                    &stream,
                    nix::sys::socket::sockopt::Linger,
                    &linger,
                );
            }
        }
        Mode::Tls(config) => {
            let Ok(conn) = rustls::ServerConnection::new(config) else {
                return;
            };
            let mut tls = rustls::StreamOwned::new(conn, stream);
            if exchange(&mut tls, requests, handler).is_some() {
                tls.conn.send_close_notify();
                let _ = tls.flush();
            }
        }
        Mode::HangUp => {
            requests.lock().unwrap().push(Request {
                method: String::new(),
                target: String::new(),
                headers: Vec::new(),
                body: Vec::new(),
                at: Instant::now(),
            });
        }
    }
}

/// How an exchange ended: with its reply written, or with a reset still to make.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    Replied,
    Reset,
}

/// Reads one request, records it and writes the reply; `None` if no request came.
fn exchange<S: Read + Write>(
    stream: &mut S,
    requests: &Mutex<Vec<Request>>,
    handler: &Handler,
) -> Option<Ended> {
    let request = read_request(stream)?;
    let n = {
        let mut all = requests.lock().unwrap();
        all.push(request.clone());
        all.len() - 1
    };
    let reply = handler(&request, n);
    if matches!(reply, Reply::Reset) {
        return Some(Ended::Reset);
    }
    write_reply(stream, reply).ok().map(|()| Ended::Replied)
}

fn tls_config() -> Arc<rustls::ServerConfig> {
    tls_config_of(TEST_CERT.as_bytes(), TEST_KEY.as_bytes())
}

/// A TLS server configuration that presents the PEM certificate chain `cert`, with
/// its PEM private key `key`.
pub fn tls_config_of(cert: &[u8], key: &[u8]) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_slice(key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    Arc::new(config)
}

/// Reads one request: its head, then a body of Content-Length bytes or in chunks.
/// `Expect: 100-continue` is answered with `100 Continue`, as servers do, so that a
/// client waiting for it (curl's uploads) goes on at once.
fn read_request<S: Read + Write>(stream: &mut S) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let at = Instant::now();
    let mut words = line.split_whitespace();
    let method = words.next()?.to_string();
    let target = words.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    let has = |name: &str, value: &str| {
        headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case(name) && v.eq_ignore_ascii_case(value))
    };
    if has("expect", "100-continue") {
        let stream = reader.get_mut();
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").ok()?;
        stream.flush().ok()?;
    }
    let body = if has("transfer-encoding", "chunked") {
        read_chunks(&mut reader)?
    } else {
        let length: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        body
    };
    Some(Request {
        method,
        target,
        headers,
        body,
        at,
    })
}

/// A chunked body (RFC 9112 §7.1): size lines, data, and an empty trailer.
fn read_chunks<R: BufRead>(reader: &mut R) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size).ok()?;
        let size = size.trim().split(';').next()?;
        let size = usize::from_str_radix(size, 16).ok()?;
        if size == 0 {
            let mut trailer = String::new();
            while reader.read_line(&mut trailer).ok()? > 2 {
                trailer.clear();
            }
            return Some(body);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).ok()?;
        let mut end = [0u8; 2];
        reader.read_exact(&mut end).ok()?;
    }
}

fn write_reply<S: Write>(stream: &mut S, reply: Reply) -> std::io::Result<()> {
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
            for (k, v) in &headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str(&format!(
                "Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            ));
            stream.write_all(head.as_bytes())?;
            stream.write_all(&body)?;
        }
        Reply::CutOff { declared, body } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {declared}\r\nConnection: close\r\n\r\n"
            );
            stream.write_all(head.as_bytes())?;
            stream.write_all(&body)?;
            stream.flush()?;
        }
        Reply::Close | Reply::Reset => {}
        Reply::Raw(bytes) => stream.write_all(&bytes)?,
        Reply::Slow(wait, reply) => {
            std::thread::sleep(wait);
            return write_reply(stream, *reply);
        }
    }
    stream.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
