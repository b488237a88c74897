//! What the HTTP client is built with, read once from curl's client options:
//! proxies (the environment's read here, once), certificates read and checked,
//! the protocol version, name-resolution overrides and the Unix socket.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use reqwest::{Identity, NoProxy, Proxy, Url};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::cli::{Cli, curl::ProxyUrl};

#[derive(Clone)]
pub struct ClientSettings {
    /// `-k`: certificates are not verified.
    pub insecure: bool,
    /// `--compressed`: the body is decoded (otherwise never).
    pub compressed: bool,
    pub connect_timeout: Option<Duration>,
    pub proxy: ProxyChoice,
    /// `--cacert`: the only certificates trusted, CAs or the server's own.
    pub ca_certs: Option<Vec<CertificateDer<'static>>>,
    /// `--cert` (and `--key`): the client certificate.
    pub identity: Option<ClientIdentity>,
    pub version: HttpVersion,
    /// `--resolve` entries for the target's host and port: the addresses it connects to.
    pub resolve: Vec<(String, Vec<SocketAddr>)>,
    /// `-4` / `-6`: names resolve to one address family only.
    pub family: Option<Family>,
    /// A socks4:// proxy (from `-x` or the environment) may carry the request: it
    /// takes IPv4 addresses only, so names resolve to those, as curl picks them.
    pub socks4: bool,
    /// `--unix-socket PATH`.
    pub unix_socket: Option<PathBuf>,
}

/// `--cert` (and `--key`): the client certificate as the HTTP client takes it, and its
/// PEM, for the TLS set-up that `--cacert` makes.
#[derive(Clone)]
pub struct ClientIdentity {
    pub identity: Identity,
    pub pem: Vec<u8>,
}

/// Where requests go through.
#[derive(Clone)]
pub enum ProxyChoice {
    /// The environment's proxies and NO_PROXY, as the client reads them.
    Environment,
    /// `--noproxy '*'`: every host is reached directly.
    Direct,
    /// `-x URL` (NO_PROXY, or `--noproxy`, still applies).
    Given { url: String, proxy: Box<Proxy> },
    /// The environment's proxies with `--noproxy` in place of NO_PROXY.
    Listed(Vec<Proxy>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1, or HTTP/2 when ALPN agrees on it.
    Any,
    /// `--http1.1`.
    Http1Only,
    /// `--http2`: over https:// offered first by ALPN; over http:// prior knowledge.
    Http2 { prior_knowledge: bool },
}

use crate::domain::Family;

impl ClientSettings {
    /// `url` is the target, when it parses: `--resolve` and `--http2` depend on it.
    pub fn from_cli(cli: &Cli, url: Option<&Url>) -> anyhow::Result<ClientSettings> {
        let version = if cli.curl.http1_1 {
            HttpVersion::Http1Only
        } else if cli.curl.http2 {
            // Over https://, ALPN already offers h2 first, as curl does.
            let prior_knowledge = url.is_none_or(|u| u.scheme() == "http");
            HttpVersion::Http2 { prior_knowledge }
        } else {
            HttpVersion::Any
        };
        let family = match (cli.curl.ipv4, cli.curl.ipv6) {
            (true, _) => Some(Family::V4),
            (_, true) => Some(Family::V6),
            _ => None,
        };
        let proxy = proxy_choice(cli.curl.proxy.as_ref(), cli.curl.noproxy.as_deref())?;
        Ok(ClientSettings {
            insecure: cli.http.insecure,
            compressed: cli.curl.compressed,
            connect_timeout: cli.http.connect_timeout,
            socks4: socks4_in_use(&proxy, url),
            proxy,
            ca_certs: cli.curl.cacert.as_deref().map(ca_certs).transpose()?,
            identity: cli
                .curl
                .cert
                .as_deref()
                .map(|cert| identity(cert, cli.curl.key.as_deref()))
                .transpose()?,
            version,
            resolve: resolve_for(cli, url),
            family,
            unix_socket: cli.curl.unix_socket.clone(),
        })
    }
}

/// The `--resolve` entries that apply to the target.
fn resolve_for(cli: &Cli, url: Option<&Url>) -> Vec<(String, Vec<SocketAddr>)> {
    let Some(url) = url else {
        return Vec::new();
    };
    let port = url.port_or_known_default();
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    cli.curl
        .resolve
        .iter()
        .filter(|e| Some(e.port) == port && e.host == host)
        .map(|e| (e.host.clone(), e.addrs.clone()))
        .collect()
}

/// Whether the proxy for `url` may be a socks4:// one (SOCKS4a resolves at the proxy).
fn socks4_in_use(proxy: &ProxyChoice, url: Option<&Url>) -> bool {
    let scheme = url.map_or("http", Url::scheme);
    let socks4 = |proxy_url: &str| proxy_url.to_ascii_lowercase().starts_with("socks4://");
    match proxy {
        ProxyChoice::Direct => false,
        ProxyChoice::Given { url, .. } => socks4(url),
        ProxyChoice::Environment | ProxyChoice::Listed(_) => {
            [format!("{scheme}_proxy"), "all_proxy".to_string()]
                .iter()
                .flat_map(|name| [name.clone(), name.to_ascii_uppercase()])
                .filter_map(|name| std::env::var(name).ok())
                .any(|value| socks4(&value))
        }
    }
}

/// `-x` replaces the environment's proxies (NO_PROXY still applies unless
/// `--noproxy` is given); `--noproxy` alone applies to the environment's.
fn proxy_choice(proxy: Option<&ProxyUrl>, noproxy: Option<&str>) -> anyhow::Result<ProxyChoice> {
    let no_proxy = || match noproxy {
        Some(list) => NoProxy::from_string(list),
        None => NoProxy::from_env(),
    };
    // curl's `*` bypasses every proxy; the matcher would apply it to names only.
    if noproxy.is_some_and(|list| list.split(',').any(|entry| entry.trim() == "*")) {
        return Ok(ProxyChoice::Direct);
    }
    if let Some(given) = proxy {
        let shown = &given.shown;
        let proxy = Proxy::all(given.url.clone())
            .with_context(|| format!("-x/--proxy: '{shown}' is not a proxy URL"))?;
        return Ok(ProxyChoice::Given {
            url: shown.clone(),
            proxy: Box::new(proxy.no_proxy(no_proxy())),
        });
    }
    if noproxy.is_none() {
        return Ok(ProxyChoice::Environment);
    }
    // The environment's proxies, rebuilt so that --noproxy replaces NO_PROXY.
    type Make = fn(&str) -> reqwest::Result<Proxy>;
    let kinds: [(&str, Make); 3] = [
        ("http_proxy", |u| Proxy::http(u)),
        ("https_proxy", |u| Proxy::https(u)),
        ("all_proxy", |u| Proxy::all(u)),
    ];
    let mut proxies = Vec::new();
    for (name, make) in kinds {
        let found = [name.to_string(), name.to_ascii_uppercase()]
            .into_iter()
            .find_map(|n| {
                std::env::var(&n)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .map(|v| (n, v))
            });
        if let Some((var, url)) = found {
            let proxy = make(&url).with_context(|| format!("{var}: '{url}' is not a proxy URL"))?;
            proxies.push(proxy.no_proxy(no_proxy()));
        }
    }
    Ok(ProxyChoice::Listed(proxies))
}

fn ca_certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let pem = read(path, "--cacert")?;
    CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .ok()
        .filter(|c| !c.is_empty())
        .with_context(|| format!("--cacert {}: expected PEM certificates", path.display()))
}

fn identity(cert: &Path, key: Option<&Path>) -> anyhow::Result<ClientIdentity> {
    let mut pem = read(cert, "--cert")?;
    if let Some(key) = key {
        pem.push(b'\n');
        pem.extend(read(key, "--key")?);
    }
    // reqwest's own message adds nothing to this one.
    let identity = Identity::from_pem(&pem).map_err(|_| {
        anyhow::anyhow!(
            "--cert {}: expected a PEM certificate and its private key (in FILE or --key FILE)",
            cert.display()
        )
    })?;
    Ok(ClientIdentity { identity, pem })
}

fn read(path: &Path, flag: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("{flag}: cannot read {}", path.display()))
}
