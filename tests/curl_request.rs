//! The request side of curl's vocabulary: for each option, `retry ARGS URL`
//! and `curl ARGS URL` against the same kind of local server on 127.0.0.1 must
//! send the same request (method, path and query, header set, body bytes) and
//! print the same bytes with the same exit status. Header names are compared as
//! sent, too. Bad values, command mode, masking of `-u`, multipart and upload replay,
//! and an upload's memory are checked on retry alone.

use crate::support::http_server;

use crate::support::curl;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::support::ports::free_port;
use crate::support::{Invocation, fast, run};
use curl::{Case, Recorder};
use http_server::{Reply, Request, Server, UnixServer};

#[test]
fn plain_get_matches_curl() {
    curl::require_curl();
    Case::new(&["{url}/a/b?x=1&y=2"]).run().assert_same();
}

#[test]
fn header_and_data_match_curl() {
    Case::new(&["-H", "X-One: 1", "-d", "a=b", "{url}/post"])
        .run()
        .assert_same();
}

#[test]
fn user_sends_basic_auth_like_curl() {
    let c = Case::new(&["-u", "alice:s3cret:x", "{url}/private"]).run();
    c.assert_same();
    let (_, r) = c.first();
    assert_eq!(
        r.header("authorization"),
        Some("Basic YWxpY2U6czNjcmV0Ong=")
    );
    Case::new(&["-u", "bob:", "{url}/"]).run().assert_same();
}

#[test]
fn user_overrides_credentials_in_the_url_like_curl() {
    Case::new(&["-u", ":pw", "http://a:b@127.0.0.1:{port}/"])
        .run()
        .assert_same();
}

#[test]
fn user_agent_sets_or_removes_the_header_like_curl() {
    let c = Case::new(&["-A", "probe/2.0 (test)", "{url}/"]).run();
    c.assert_same();
    assert_eq!(c.first().1.header("user-agent"), Some("probe/2.0 (test)"));
    let c = Case::new(&["-A", "", "{url}/"]).run();
    c.assert_same();
    assert_eq!(c.first().1.header("user-agent"), None);
}

#[test]
fn referer_sets_the_header_like_curl() {
    let c = Case::new(&["-e", "https://from.example/page?q=1", "{url}/"]).run();
    c.assert_same();
    assert_eq!(
        c.first().1.header("referer"),
        Some("https://from.example/page?q=1")
    );
}

#[test]
fn cookie_options_join_into_one_header_like_curl() {
    let c = Case::new(&["-b", "a=1", "-b", "b=2; c=3", "{url}/"]).run();
    c.assert_same();
    assert_eq!(c.first().1.header("cookie"), Some("a=1;b=2; c=3"));
}

const LINES: &[u8] = b"l1\nl2\r\n\nend";

#[test]
fn data_from_a_file_loses_its_newlines_like_curl() {
    let c = Case::new(&["-d", "@body.txt", "-d", "x=y", "{url}/"])
        .file("body.txt", LINES)
        .run();
    c.assert_same();
    assert_eq!(c.first().1.body, b"l1l2end&x=y");
}

#[test]
fn data_binary_keeps_the_bytes_like_curl() {
    let c = Case::new(&[
        "--data-binary",
        "@body.txt",
        "--data-binary",
        "tail",
        "{url}/",
    ])
    .file("body.txt", LINES)
    .run();
    c.assert_same();
    assert_eq!(c.first().1.body, b"l1\nl2\r\n\nend&tail");
}

#[test]
fn data_from_stdin_matches_curl() {
    Case::new(&["--data-binary", "@-", "{url}/in"])
        .stdin(b"from\nstdin\n")
        .run()
        .assert_same();
    Case::new(&["-d", "@-", "{url}/in"])
        .stdin(b"from\nstdin\n")
        .run()
        .assert_same();
}

#[test]
fn data_raw_takes_an_at_sign_literally_like_curl() {
    let c = Case::new(&["--data-raw", "@body.txt", "{url}/"])
        .file("body.txt", LINES)
        .run();
    c.assert_same();
    assert_eq!(c.first().1.body, b"@body.txt");
}

#[test]
fn data_urlencode_forms_match_curl() {
    let c = Case::new(&[
        "--data-urlencode",
        "a b&c",
        "--data-urlencode",
        "=x=y z",
        "--data-urlencode",
        "name=v w~*/é",
        "--data-urlencode",
        "@body.txt",
        "--data-urlencode",
        "file@body.txt",
        "-d",
        "plain=1",
        "--data-raw",
        "raw=@2",
        "{url}/form",
    ])
    .file("body.txt", LINES)
    .run();
    c.assert_same();
    assert!(
        c.first()
            .1
            .body
            .starts_with(b"a+b%26c&x%3Dy+z&name=v+w~%2A%2F%C3%A9&")
    );
}

#[test]
fn get_moves_the_data_into_the_query_like_curl() {
    let c = Case::new(&[
        "-G",
        "-d",
        "a=1",
        "--data-urlencode",
        "b=x y",
        "{url}/p?z=0",
    ])
    .run();
    c.assert_same();
    let (_, r) = c.first();
    assert_eq!(
        (r.method.as_str(), r.target.as_str()),
        ("GET", "/p?z=0&a=1&b=x+y")
    );
    Case::new(&["-G", "-d", "q=1", "{url}/bare"])
        .run()
        .assert_same();
    Case::new(&["-G", "-X", "DELETE", "-d", "id=7", "{url}/items"])
        .run()
        .assert_same();
}

#[test]
fn form_builds_the_same_multipart_body_as_curl() {
    let c = Case::new(&[
        "-F",
        "text=hello world",
        "-F",
        "typed=x;type=text/x-custom",
        "-F",
        "upload=@notes.txt",
        "-F",
        "blob=@data.bin",
        "-F",
        "renamed=@notes.txt;filename=other.name",
        "-F",
        "inline=<notes.txt",
        "-F",
        "pic=@img.png;type=image/x-test",
        "{url}/upload",
    ])
    .file("notes.txt", LINES)
    .file("data.bin", &[0, 1, 2, 255, b'\r', b'\n'])
    .file("img.png", b"\x89PNG")
    .run();
    c.assert_same();
    let (_, r) = c.first();
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("multipart/form-data; boundary=")
    );
}

#[test]
fn form_body_is_replayed_byte_for_byte_on_every_attempt() {
    let server = Server::script(vec![
        Reply::status(503),
        Reply::status(502),
        Reply::ok("done"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f.bin");
    std::fs::write(&file, (0..=255u8).collect::<Vec<_>>()).unwrap();
    let field = format!("f=@{}", file.display());
    let out = run(&fast(&[
        "--retry-unsafe",
        "-F",
        "a=1",
        "-F",
        &field,
        &server.url("/"),
    ]));
    assert_eq!(out.status, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests[1..] {
        assert_eq!(r.body, requests[0].body);
        assert_eq!(r.header("content-type"), requests[0].header("content-type"));
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn brotli(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
        w.write_all(data).unwrap();
    }
    out
}

#[test]
fn compressed_asks_for_every_encoding_and_decodes_like_curl() {
    let text = b"the same words again and again, the same words again and again\n".repeat(50);
    let encoded: [(&str, Vec<u8>); 4] = [
        ("gzip", gzip(&text)),
        ("deflate", zlib(&text)),
        ("br", brotli(&text)),
        ("zstd", zstd::encode_all(&text[..], 3).unwrap()),
    ];
    for (encoding, body) in encoded {
        let reply = Reply::status(200)
            .header("Content-Encoding", encoding)
            .body(&body);
        let c = Case::new(&["--compressed", "{url}/z"])
            .reply(reply.clone())
            .run();
        c.assert_same();
        assert_eq!(c.retry.stdout, text, "{encoding} decoded");
        assert_eq!(
            c.first().1.header("accept-encoding"),
            Some("deflate, gzip, br, zstd")
        );
        // Without --compressed nothing is asked for and the bytes come as sent.
        let c = Case::new(&["{url}/z"]).reply(reply).run();
        c.assert_same();
        assert_eq!(c.retry.stdout, body, "{encoding} left encoded");
        assert_eq!(c.first().1.header("accept-encoding"), None);
    }
}

#[test]
fn proxy_sends_the_absolute_url_to_the_proxy_like_curl() {
    // The origin is never contacted: the proxy (the recording server) answers.
    let origin = format!("http://localhost:{}/via?x=1", free_port());
    let c = Case::new(&["-x", "127.0.0.1:{port}", &origin])
        .reply(Reply::ok("from the proxy"))
        .run();
    // curl adds the legacy Proxy-Connection header; HTTP/1.1 proxies do not need it.
    c.assert_same_requests_except(&["proxy-connection"]);
    c.assert_same_output();
    assert_eq!(c.first().1.target, origin);
    let c = Case::new(&["-x", "{url}", &origin]).run();
    c.assert_same_requests_except(&["proxy-connection"]);
    c.assert_same_output();
    // Credentials in the proxy URL become Proxy-Authorization, as with curl.
    let c = Case::new(&["-x", "http://pu:pp@127.0.0.1:{port}", &origin]).run();
    c.assert_same_requests_except(&["proxy-connection"]);
    assert_eq!(
        c.first().1.header("proxy-authorization"),
        Some("Basic cHU6cHA=")
    );
}

#[test]
fn noproxy_bypasses_the_given_proxy_like_curl() {
    let proxy = format!("http://127.0.0.1:{}", free_port());
    Case::new(&[
        "-x",
        &proxy,
        "--noproxy",
        "localhost,127.0.0.1",
        "{url}/direct",
    ])
    .run()
    .assert_same();
    // And the environment's proxy, which --noproxy overrides NO_PROXY for.
    Case::new(&["--noproxy", "*", "{url}/direct"])
        .env("http_proxy", &proxy)
        .env("NO_PROXY", "example.com")
        .run()
        .assert_same();
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, made
/// with openssl in `dir`.
fn make_certificates(dir: &Path) {
    let ssl = |args: &[&str]| {
        let out = Invocation::of("openssl").args(args).current_dir(dir).run();
        assert_eq!(out.status, 0, "openssl {args:?}: {}", out.stderr);
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    ssl(&[
        &["req", "-x509"][..],
        &ec,
        &[
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=retry test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    ]
    .concat());
    for (name, ext) in [
        (
            "server",
            "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        ),
        ("client", "extendedKeyUsage=clientAuth\n"),
    ] {
        std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
        ssl(&[
            &["req"][..],
            &ec,
            &[
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
                "-subj",
                &format!("/CN={name}"),
            ],
        ]
        .concat());
        ssl(&[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &format!("{name}.pem"),
            "-days",
            "2",
            "-extfile",
            &format!("{name}.ext"),
        ]);
    }
}

fn tls_config(dir: &Path, client_auth: bool) -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs = CertificateDer::pem_file_iter(dir.join("server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).unwrap();
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if client_auth {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(dir.join("ca.pem")).unwrap())
            .unwrap();
        let verifier =
            rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .unwrap();
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    Arc::new(builder.with_single_cert(certs, key).unwrap())
}

#[test]
fn cacert_trusts_a_private_ca_like_curl() {
    let pki = tempfile::tempdir().unwrap();
    make_certificates(pki.path());
    let config = tls_config(pki.path(), false);
    let ca = pki.path().join("ca.pem");
    let c = Case::new(&["--cacert", ca.to_str().unwrap(), "{https}/secure"])
        .server(move |_| Server::tls_with(Arc::clone(&config), vec![Reply::ok("trusted")]))
        .run();
    c.assert_same();
    assert_eq!(c.retry.stdout, b"trusted");
}

#[test]
fn cert_and_key_present_a_client_certificate_like_curl() {
    let pki = tempfile::tempdir().unwrap();
    make_certificates(pki.path());
    let p = |name: &str| pki.path().join(name).to_string_lossy().into_owned();
    let config = tls_config(pki.path(), true);
    let (ca, cert, key) = (p("ca.pem"), p("client.pem"), p("client.key"));
    let c = Case::new(&[
        "--cacert",
        &ca,
        "--cert",
        &cert,
        "--key",
        &key,
        "{https}/mtls",
    ])
    .server(move |_| Server::tls_with(Arc::clone(&config), vec![Reply::ok("client known")]))
    .run();
    c.assert_same();
    assert_eq!(c.retry.stdout, b"client known");
    // Certificate and key in one file, as curl also accepts.
    let both = pki.path().join("both.pem");
    let mut pem = std::fs::read(&cert).unwrap();
    pem.extend(std::fs::read(&key).unwrap());
    std::fs::write(&both, pem).unwrap();
    let config = tls_config(pki.path(), true);
    Case::new(&[
        "--cacert",
        &ca,
        "-E",
        both.to_str().unwrap(),
        "{https}/mtls",
    ])
    .server(move |_| Server::tls_with(Arc::clone(&config), vec![Reply::ok("client known")]))
    .run()
    .assert_same();
}

/// A recording HTTP server that speaks HTTP/1.1 and HTTP/2 with prior
/// knowledge (h2c) on 127.0.0.1, and notes each request's version.
struct H2Server {
    port: u16,
    requests: Recorded,
    runtime: Option<tokio::runtime::Runtime>,
}

impl H2Server {
    fn start() -> H2Server {
        H2Server::start_with(None)
    }

    /// Over TLS with `config`, whose ALPN list says which versions it offers.
    fn start_with(tls: Option<Arc<rustls::ServerConfig>>) -> H2Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        runtime.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let recorded = Arc::clone(&recorded);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    match acceptor {
                        None => h2_serve(stream, recorded).await,
                        Some(acceptor) => {
                            if let Ok(tls) = acceptor.accept(stream).await {
                                h2_serve(tls, recorded).await;
                            }
                        }
                    }
                });
            }
        });
        H2Server {
            port,
            requests,
            runtime: Some(runtime),
        }
    }

    fn versions(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(v, _)| v.clone())
            .collect()
    }
}

type Recorded = Arc<Mutex<Vec<(String, Request)>>>;

async fn h2_serve<S>(stream: S, recorded: Recorded)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let service = hyper::service::service_fn(move |req| {
        let recorded = Arc::clone(&recorded);
        async move { Ok::<_, hyper::Error>(h2_record(req, &recorded).await) }
    });
    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn h2_record(
    req: hyper::Request<hyper::body::Incoming>,
    recorded: &Mutex<Vec<(String, Request)>>,
) -> hyper::Response<http_body_util::Full<bytes::Bytes>> {
    use http_body_util::BodyExt;
    let version = format!("{:?}", req.version());
    let method = req.method().to_string();
    let target = req
        .uri()
        .path_and_query()
        .map_or("/".into(), |p| p.to_string());
    let mut headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    // HTTP/2 carries Host as :authority; record it as the Host header HTTP/1.1 sends.
    if let (Some(authority), false) = (req.uri().authority(), req.headers().contains_key("host")) {
        headers.push(("host".into(), authority.to_string()));
    }
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let request = Request {
        method,
        target,
        headers,
        body,
        at: std::time::Instant::now(),
    };
    recorded.lock().unwrap().push((version, request));
    hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(
        b"h2 or not",
    )))
}

impl Recorder for H2Server {
    fn requests(&self) -> Vec<Request> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(_, r)| r.clone())
            .collect()
    }
    fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for H2Server {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[test]
fn http2_over_http_is_prior_knowledge() {
    let versions = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&versions);
    let server = move |_: &Path| {
        let s = H2Server::start();
        seen.lock().unwrap().push(s.port);
        s
    };
    let c = Case::new(&["--http2", "{url}/two"]).server(server).run();
    // curl's --http2 over http:// asks to upgrade with these headers; retry does not
    // (prior knowledge, no Upgrade dance, as the README says), so the request is otherwise the same.
    c.assert_same_requests_except(&["connection", "upgrade", "http2-settings"]);
    c.assert_same_output();
    assert_eq!(c.curl.normal()[0].header("upgrade"), Some("h2c"));
    assert_eq!(versions.lock().unwrap().len(), 2);
    // retry's server saw HTTP/2 from the first byte.
    let s = H2Server::start();
    let out = run(&fast(&[
        "--http2",
        &format!("http://127.0.0.1:{}/two", s.port),
    ]));
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(s.versions(), ["HTTP/2.0"]);
}

#[test]
fn http2_over_https_is_negotiated_by_alpn_like_curl() {
    let pki = tempfile::tempdir().unwrap();
    make_certificates(pki.path());
    let mut config = (*tls_config(pki.path(), false)).clone();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let config = Arc::new(config);
    let ca = pki.path().join("ca.pem").to_string_lossy().into_owned();
    let made = Arc::clone(&config);
    let c = Case::new(&["--http2", "--cacert", &ca, "{https}/alpn"])
        .server(move |_| H2Server::start_with(Some(Arc::clone(&made))))
        .run();
    c.assert_same();
    let s = H2Server::start_with(Some(config));
    let out = run(&fast(&[
        "--http2",
        "--cacert",
        &ca,
        &format!("https://127.0.0.1:{}/alpn", s.port),
    ]));
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(s.versions(), ["HTTP/2.0"]);
}

#[test]
fn http1_1_pins_http_1_1_like_curl() {
    let c = Case::new(&["--http1.1", "{url}/one"])
        .server(|_| H2Server::start())
        .run();
    c.assert_same();
    let s = H2Server::start();
    let out = run(&fast(&[
        "--http1.1",
        &format!("http://127.0.0.1:{}/one", s.port),
    ]));
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(s.versions(), ["HTTP/1.1"]);
}

#[test]
fn resolve_sends_a_name_to_the_given_address_like_curl() {
    let c = Case::new(&[
        "--resolve",
        "retry-test.invalid:{port}:127.0.0.1",
        "http://retry-test.invalid:{port}/named",
    ])
    .run();
    c.assert_same();
    assert_eq!(c.first().1.header("host"), Some("retry-test.invalid:PORT"));
}

#[test]
fn ipv4_and_ipv6_limit_the_address_family_like_curl() {
    // localhost has an IPv4 address here; the server listens on 127.0.0.1.
    Case::new(&["-4", "http://localhost:{port}/v4"])
        .run()
        .assert_same();
    let v6_only_fails = Case::new(&["-6", "http://127.0.0.1:{port}/v6"]).run();
    v6_only_fails.assert_same_output();
    assert!(v6_only_fails.retry.requests.is_empty());
}

#[test]
fn unix_socket_talks_http_over_the_socket_like_curl() {
    struct Unix(UnixServer);
    impl Recorder for Unix {
        fn requests(&self) -> Vec<Request> {
            self.0.requests()
        }
        fn port(&self) -> u16 {
            0
        }
    }
    let c = Case::new(&[
        "--unix-socket",
        "{dir}/api.sock",
        "http://localhost/v1/info",
    ])
    .server(|dir| {
        Unix(UnixServer::script(
            &dir.join("api.sock"),
            vec![Reply::ok("{\"ok\":1}")],
        ))
    })
    .run();
    c.assert_same();
    assert_eq!(c.retry.stdout, b"{\"ok\":1}");
}

#[test]
fn bad_values_exit_125_naming_the_flag_and_send_nothing() {
    let server = Server::script(vec![Reply::ok("")]).expect_hits(0);
    let url = server.url("/");
    let cases: &[(&[&str], &str)] = &[
        (&["-u", "nopassword"], "--user"),
        (&["-b", "cookies.txt"], "--cookie"),
        (&["-e", "http://x/;auto"], "--referer"),
        (&["-A", "bad\nagent"], "--user-agent"),
        (&["-F", "novalue"], "--form"),
        (&["-F", "f=@"], "--form"),
        (&["-F", "a=1;headers=X: y"], "--form"),
        (&["-F", "f=@/no/such/file"], "-F/--form"),
        (&["-F", "a=1", "-d", "b=2"], "--form"),
        (&["-x", "ftp://127.0.0.1:1"], "--proxy"),
        (&["-x", "http://"], "--proxy"),
        (&["--noproxy", "a b"], "--noproxy"),
        (&["--cacert", "/no/such/ca.pem"], "--cacert"),
        (&["--cacert", "Cargo.toml"], "--cacert"),
        (&["--cert", "/no/such/cert.pem"], "--cert"),
        (&["--cert", "Cargo.toml"], "--cert"),
        (&["--key", "k.pem"], "--cert"),
        (&["--http1.1", "--http2"], "--http"),
        (&["--resolve", "host:80"], "--resolve"),
        (&["--resolve", "host:port:127.0.0.1"], "--resolve"),
        (&["--resolve", "host:80:not-an-address"], "--resolve"),
        (&["-4", "-6"], "--ipv"),
        (&["--data-binary", "@/no/such/file"], "--data-binary"),
        (&["--data-urlencode", "n@/no/such/file"], "--data-urlencode"),
        (&["-d", "@"], "--data"),
    ];
    for (args, flag) in cases {
        let mut all: Vec<&str> = args.to_vec();
        all.push(&url);
        let out = run(&fast(&all));
        let err = &out.stderr;
        assert_eq!(out.status, 125, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?} should name {flag}: {err}");
        assert!(
            !err.contains("nopassword"),
            "the -u value is never echoed: {err}"
        );
    }
}

#[test]
fn request_options_are_refused_in_command_mode() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let marker = marker.to_str().unwrap();
    let options: &[(&[&str], &str)] = &[
        (&["-u", "a:b"], "-u/--user"),
        (&["-A", "x"], "-A/--user-agent"),
        (&["-e", "x"], "-e/--referer"),
        (&["-b", "a=1"], "-b/--cookie"),
        (&["--data-binary", "x"], "--data-binary"),
        (&["--data-raw", "x"], "--data-raw"),
        (&["--data-urlencode", "x"], "--data-urlencode"),
        (&["-G"], "-G/--get"),
        (&["-F", "a=1"], "-F/--form"),
        (&["--compressed"], "--compressed"),
        (&["-x", "http://127.0.0.1:1"], "-x/--proxy"),
        (&["--noproxy", "*"], "--noproxy"),
        (&["--cacert", "ca.pem"], "--cacert"),
        (&["--cert", "c.pem"], "-E/--cert"),
        (&["--http1.1"], "--http1.1"),
        (&["--http2"], "--http2"),
        (&["--resolve", "h:1:127.0.0.1"], "--resolve"),
        (&["-4"], "-4/--ipv4"),
        (&["-6"], "-6/--ipv6"),
        (&["--unix-socket", "/tmp/s"], "--unix-socket"),
    ];
    for (args, flag) in options {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--", "touch", marker]);
        let out = run(&fast(&all));
        let err = &out.stderr;
        assert_eq!(out.status, 125, "{args:?}: {err}");
        assert!(
            err.contains(flag)
                && err.contains("of HTTP mode")
                && err.contains("selects command mode"),
            "{args:?}: {err}"
        );
        assert!(!Path::new(marker).exists(), "{args:?} ran the command");
    }
}

#[test]
fn user_credentials_are_masked_in_every_output() {
    let server = Server::script(vec![Reply::status(503), Reply::ok("in")]);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let url = server
        .url("/")
        .replace("http://", "http://urluser:urlpass@");
    let secret_args = ["-u", "alice:hunter2", "--report", report.to_str().unwrap()];
    let mut runs = Vec::new();
    for extra in [
        &["-vv"][..],
        &["-vv", "--log-format", "json"],
        &["--dry-run"],
    ] {
        let mut args: Vec<&str> = secret_args.to_vec();
        args.extend_from_slice(extra);
        args.push(&url);
        let out = run(&fast(&args));
        assert_eq!(out.status, 0, "{}", out.stderr);
        runs.push(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            out.stderr
        ));
    }
    runs.push(std::fs::read_to_string(&report).unwrap());
    let auth = server.requests()[0]
        .header("authorization")
        .unwrap()
        .to_string();
    for text in &runs {
        for secret in ["hunter2", "urlpass", auth.as_str(), "YWxpY2U6aHVudGVyMg"] {
            assert!(!text.contains(secret), "{secret} shown in:\n{text}");
        }
    }
    assert!(
        runs[2].contains("alice:***"),
        "dry run names the user: {}",
        runs[2]
    );
    assert!(
        runs[3].contains("http://***@127.0.0.1") && !runs[3].contains("urluser"),
        "report masks the URL's user information: {}",
        runs[3]
    );
    assert!(
        runs[0].contains("authorization: ***"),
        "-vv masks the header: {}",
        runs[0]
    );
}

#[test]
fn user_credentials_are_not_sent_to_another_host_after_a_redirect() {
    let other = Server::script(vec![Reply::ok("elsewhere")]);
    let elsewhere = format!("http://localhost:{}/landing", other.port());
    let origin = Server::script(vec![Reply::status(302).header("Location", &elsewhere)]);
    let out = run(&fast(&["-u", "alice:hunter2", &origin.url("/start")]));
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, b"elsewhere");
    assert!(origin.requests()[0].header("authorization").is_some());
    assert_eq!(other.requests()[0].header("authorization"), None);
}

#[test]
fn form_file_from_stdin_matches_curl() {
    for field in ["f=@-", "g=<-", "h=@-;type=text/plain"] {
        Case::new(&["-F", "a=1", "-F", field, "{url}/up"])
            .stdin(b"piped\nbytes")
            .run()
            .assert_same();
    }
}

/// Header names as the request carried them, in order.
fn names(request: &Request) -> Vec<String> {
    let mut names: Vec<String> = request.headers.iter().map(|(k, _)| k.clone()).collect();
    names.sort();
    names
}

#[test]
fn header_names_go_out_in_curls_case() {
    for args in [
        &["{url}/"][..],
        &[
            "-d",
            "a=1",
            "-H",
            "X-Trace-Id: 7",
            "-e",
            "http://r/",
            "{url}/",
        ],
        &["--json", "{}", "-A", "agent", "-u", "a:b", "{url}/"],
    ] {
        let c = Case::new(args).run();
        c.assert_same();
        assert_eq!(
            names(&c.retry.requests[0]),
            names(&c.curl.requests[0]),
            "{args:?}"
        );
    }
    // A name the user writes in lower case is sent Title-Cased: the HTTP library
    // cannot keep it (a listed difference; curl sends it as written).
    let c = Case::new(&["-H", "x-api-key: k", "{url}/"]).run();
    c.assert_same();
    assert!(names(&c.curl.requests[0]).contains(&"x-api-key".to_string()));
    assert!(names(&c.retry.requests[0]).contains(&"X-Api-Key".to_string()));
}

/// 3000 bytes of every value, CR and LF among them: what `-d @FILE` used to mangle.
fn binary() -> Vec<u8> {
    (0..3000u32).map(|i| (i * 7 % 256) as u8).collect()
}

/// curl sends `Expect: 100-continue` with every upload (a listed difference): left
/// out of the comparison.
const UPLOAD_DIFFERENCES: &[&str] = &["expect"];

#[test]
fn upload_file_puts_the_bytes_unchanged_like_curl() {
    for (url, path) in [
        ("{url}/up/", "/up/blob%20%2b%c3%a4.bin"),
        ("{url}", "/blob%20%2b%c3%a4.bin"),
        ("{url}/up/named", "/up/named"),
        ("{url}/up/?v=2", "/up/blob%20%2b%c3%a4.bin?v=2"),
    ] {
        let c = Case::new(&["-T", "blob +ä.bin", url])
            .file("blob +ä.bin", &binary())
            .run();
        c.assert_same_requests_except(UPLOAD_DIFFERENCES);
        c.assert_same_output();
        let (_, r) = c.first();
        assert_eq!((r.method.as_str(), r.target.as_str()), ("PUT", path));
        assert_eq!(r.body, binary(), "{url}: the bytes as they are");
        assert_eq!(r.header("content-length"), Some("3000"));
        assert_eq!(r.header("content-type"), None, "{url}");
    }
    // A type given with -H, and another method with -X, as curl takes them.
    let c = Case::new(&[
        "-T",
        "page.html",
        "-X",
        "POST",
        "-H",
        "Content-Type: text/html",
        "{url}/in",
    ])
    .file("page.html", b"<p>\r\n</p>\n")
    .run();
    c.assert_same_requests_except(UPLOAD_DIFFERENCES);
    assert_eq!(c.first().1.method, "POST");
}

#[test]
fn upload_from_stdin_matches_curl_but_for_its_length() {
    let c = Case::new(&["-T", "-", "{url}/dir/"]).stdin(&binary()).run();
    // curl sends stdin chunked; retry records it and sends its length (listed).
    c.assert_same_requests_except(&["expect", "transfer-encoding", "content-length"]);
    c.assert_same_output();
    let (curl, ours) = c.first();
    assert_eq!(curl.header("transfer-encoding"), Some("chunked"));
    assert_eq!(ours.header("content-length"), Some("3000"));
    assert_eq!(ours.target, "/dir/", "no file name for stdin");
}

#[test]
fn upload_from_stdin_is_recorded_and_replayed_on_every_attempt() {
    let server = Server::script(vec![
        Reply::status(503),
        Reply::status(502),
        Reply::ok("stored"),
    ]);
    let out = crate::support::retry()
        .args(fast(&["-T", "-", &server.url("/in")]))
        .input(binary())
        .run();
    assert_eq!(out.status, 0, "{}", out.stderr);
    assert_eq!(out.stdout, b"stored");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(r.method, "PUT");
        assert_eq!(r.body, binary());
    }
}

#[test]
fn upload_file_is_opened_again_for_every_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.json");
    std::fs::write(&file, b"first version").unwrap();
    let path = file.clone();
    // The first request finds the file changed behind it: the next one sends it anew.
    let server = Server::handler(move |_, n| {
        if n == 0 {
            std::fs::write(&path, b"second, longer version").unwrap();
            Reply::status(503)
        } else {
            Reply::ok("ok")
        }
    });
    let out = run(&fast(&["-T", file.to_str().unwrap(), &server.url("/s")]));
    assert_eq!(out.status, 0, "{}", out.stderr);
    let requests = server.requests();
    assert_eq!(requests[0].body, b"first version");
    assert_eq!(requests[1].body, b"second, longer version");
    assert_eq!(requests[1].header("content-length"), Some("22"));
}

/// Peak memory of `retry ARGS`, in KiB, as the kernel counted it (python's
/// getrusage of its one child).
fn peak_kib(args: &[&str]) -> (i32, u64) {
    const MEASURE: &str = "import resource, subprocess, sys\n\
        status = subprocess.run(sys.argv[1:]).returncode\n\
        print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)";
    let out = Invocation::of("python3")
        .args(["-c", MEASURE, crate::support::bin()])
        .args(args)
        .run();
    let text = out.stdout_text();
    let mut words = text.split_whitespace();
    let status = words.next().and_then(|w| w.parse().ok());
    let status = status.unwrap_or_else(|| panic!("python3: {text:?} {}", out.stderr));
    let kib = words
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or(u64::MAX);
    (status, kib)
}

#[test]
fn a_big_upload_is_streamed_not_held_in_memory() {
    const SIZE: usize = 96 << 20;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.bin");
    std::fs::write(&file, vec![b'u'; SIZE]).unwrap();
    let server = Server::script(vec![Reply::status(503), Reply::ok("ok")]);
    let (status, kib) = peak_kib(&fast(&[
        "-s",
        "-o",
        "/dev/null",
        "-T",
        file.to_str().unwrap(),
        &server.url("/big"),
    ]));
    assert_eq!(status, 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.body.len() == SIZE));
    assert!(
        kib < 48 << 10,
        "retry peaked at {kib} KiB uploading {} MiB twice",
        SIZE >> 20
    );
}

#[test]
fn upload_options_are_refused_with_what_they_cannot_be_used_with() {
    let server = Server::script(vec![Reply::ok("")]).expect_hits(0);
    let url = server.url("/");
    for (args, says) in [
        (&["-T", "/no/such/file"][..], "-T/--upload-file"),
        (&["-T", "/tmp"], "is a directory"),
        (&["-T", "f", "-d", "x"], "--upload-file"),
        (&["-T", "f", "-F", "a=1"], "--upload-file"),
        (&["-T", "f", "-I"], "--upload-file"),
        (&["-T", "f[1-2]"], "shell loop"),
        (&["-T", "f", "-C", "-", "-o", "out"], "-C/--continue-at"),
    ] {
        let mut all = args.to_vec();
        all.push(&url);
        let out = run(&fast(&all));
        assert_eq!(out.status, 125, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn a_glob_in_the_url_is_refused_naming_a_shell_loop_or_g() {
    // curl expands the glob into three transfers.
    let c = Case::new(&["{url}/page/[1-3]"]).run();
    assert_eq!(c.curl.requests.len(), 3);
    for url in ["/page/[1-3]", "/{a,b}", "/p?x=[1]", "/p?id={7}"] {
        let server = Server::script(vec![Reply::ok("")]).expect_hits(0);
        let out = run(&fast(&[&server.url(url)]));
        assert_eq!(out.status, 125, "{url}: {}", out.stderr);
        assert!(
            out.stderr.contains("shell loop") && out.stderr.contains("-g/--globoff"),
            "{url}: {}",
            out.stderr
        );
    }
    // Brackets around an IPv6 literal are an address: the attempt is made (and refused).
    let port = crate::support::ports::free_port();
    let out = run(&fast(&["-a", "1", &format!("http://[::1]:{port}/")]));
    assert_eq!(out.status, 7, "{}", out.stderr);
}

#[test]
fn globoff_sends_brackets_as_they_are_like_curl() {
    let c = Case::new(&["-g", "{url}/a[1]/b?x=[2]&y={z}"]).run();
    c.assert_same();
    assert_eq!(c.first().1.target, "/a[1]/b?x=[2]&y={z}");
    // { and } in the path are percent-encoded by the URL library (a listed difference).
    let c = Case::new(&["-g", "{url}/{a}"]).run();
    assert_eq!(c.first().0.target, "/{a}");
    assert_eq!(c.first().1.target, "/%7Ba%7D");
}
