//! curl's request options that are not the body: the headers `-u`, `-A`, `-e`,
//! `-b` and `--compressed` stand for, and the client settings for proxies,
//! certificates, protocol versions, name resolution and Unix sockets.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use base64::Engine;
use reqwest::header::{
    ACCEPT_ENCODING, AUTHORIZATION, COOKIE, HeaderMap, HeaderValue, REFERER, USER_AGENT,
};
use reqwest::{ClientBuilder, NoProxy, Proxy, Url};

use crate::cli::Cli;

/// What curl sends with `--compressed` when built with every decoder.
pub const ACCEPT_ENCODINGS: &str = "deflate, gzip, br, zstd";

/// The headers curl's options stand for; `-H` lines are applied after these
/// and win, as in curl.
pub fn headers(cli: &Cli, headers: &mut HeaderMap) -> anyhow::Result<()> {
    if let Some(agent) = &cli.user_agent {
        if agent.is_empty() {
            headers.remove(USER_AGENT);
        } else {
            headers.insert(USER_AGENT, value(agent, "-A/--user-agent")?);
        }
    }
    if let Some(referer) = cli.referer.as_deref().filter(|r| !r.is_empty()) {
        headers.insert(REFERER, value(referer, "-e/--referer")?);
    }
    if !cli.cookie.is_empty() {
        let mut cookie = value(&cli.cookie.join(";"), "-b/--cookie")?;
        cookie.set_sensitive(true);
        headers.insert(COOKIE, cookie);
    }
    if let Some(user) = &cli.user {
        // Checked here, not by clap, whose message would echo the value.
        anyhow::ensure!(
            user.contains(':'),
            "-u/--user: expected USER:PASSWORD (curl's password prompt is not supported; \
             an empty password is USER:)"
        );
        let token = base64::engine::general_purpose::STANDARD.encode(user.as_bytes());
        let mut auth = HeaderValue::from_str(&format!("Basic {token}"))
            .context("-u/--user: cannot make the Authorization header")?;
        auth.set_sensitive(true);
        headers.insert(AUTHORIZATION, auth);
    }
    if cli.compressed {
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_static(ACCEPT_ENCODINGS));
    }
    Ok(())
}

fn value(text: &str, flag: &str) -> anyhow::Result<HeaderValue> {
    HeaderValue::from_str(text).with_context(|| format!("{flag}: not a valid header value"))
}

/// `-u USER:PASSWORD` as it may be shown: `USER:***`.
pub fn shown_user(cli: &Cli) -> Option<String> {
    let user = cli.user.as_deref()?;
    let name = user.split_once(':').map_or(user, |(name, _)| name);
    Some(format!("{name}:***"))
}

/// What curl's request options change, for `--dry-run`; secrets as `***`.
pub fn describe(cli: &Cli) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(user) = shown_user(cli) {
        out.push(format!(
            "Basic authentication as {user} (-u); not sent to another host after a redirect"
        ));
    }
    out.push(if cli.compressed {
        format!("--compressed: Accept-Encoding: {ACCEPT_ENCODINGS}; the body is decoded")
    } else {
        "no Accept-Encoding is sent and the body is never decoded (--compressed asks and decodes)"
            .into()
    });
    if let Some(proxy) = &cli.proxy {
        out.push(format!(
            "proxy {} (-x) instead of the environment's",
            crate::report::redact_url(proxy)
        ));
    }
    if let Some(path) = &cli.unix_socket {
        out.push(format!(
            "connections go to the Unix socket {}",
            path.display()
        ));
    }
    if cli.http1_1 {
        out.push("HTTP/1.1 only (--http1.1)".into());
    }
    if cli.http2 {
        out.push("HTTP/2 (--http2): offered first by ALPN over https://, prior knowledge (h2c) over http://".into());
    }
    out
}

/// Applies every curl client option to `builder`; `url` is the target.
pub fn client(
    cli: &Cli,
    url: Option<&Url>,
    builder: ClientBuilder,
) -> anyhow::Result<ClientBuilder> {
    let mut builder = if cli.compressed {
        builder.gzip(true).deflate(true).brotli(true).zstd(true)
    } else {
        // Without --compressed nothing is asked for and nothing is decoded, as with curl.
        builder.no_gzip().no_deflate().no_brotli().no_zstd()
    };
    builder = proxies(cli, builder)?;
    builder = tls(cli, builder)?;
    if cli.http1_1 {
        builder = builder.http1_only();
    }
    // Over https://, ALPN already offers h2 first, as curl does; http:// needs prior knowledge.
    if cli.http2 && url.is_none_or(|u| u.scheme() == "http") {
        builder = builder.http2_prior_knowledge();
    }
    if let Some(url) = url {
        let port = url.port_or_known_default();
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        for entry in cli
            .resolve
            .iter()
            .filter(|e| Some(e.port) == port && e.host == host)
        {
            builder = builder.resolve_to_addrs(&entry.host, &entry.addrs);
        }
    }
    if cli.ipv4 || cli.ipv6 {
        let family = if cli.ipv4 { Family::V4 } else { Family::V6 };
        let local: IpAddr = match family {
            Family::V4 => Ipv4Addr::UNSPECIFIED.into(),
            Family::V6 => Ipv6Addr::UNSPECIFIED.into(),
        };
        builder = builder
            .dns_resolver(Arc::new(OneFamily(family)))
            .local_address(local);
    }
    if let Some(path) = &cli.unix_socket {
        builder = builder.unix_socket(path.as_path());
    }
    Ok(builder)
}

/// `-x` replaces the environment's proxies (NO_PROXY still applies unless
/// `--noproxy` is given); `--noproxy` alone applies to the environment's.
fn proxies(cli: &Cli, mut builder: ClientBuilder) -> anyhow::Result<ClientBuilder> {
    let no_proxy = || match &cli.noproxy {
        Some(list) => NoProxy::from_string(list),
        None => NoProxy::from_env(),
    };
    // curl's `*` bypasses every proxy; the matcher would apply it to names only.
    if let Some(list) = &cli.noproxy {
        if list.split(',').any(|entry| entry.trim() == "*") {
            return Ok(builder.no_proxy());
        }
    }
    if let Some(url) = &cli.proxy {
        let proxy = Proxy::all(url.as_str())
            .with_context(|| format!("-x/--proxy: '{url}' is not a proxy URL"))?;
        return Ok(builder.proxy(proxy.no_proxy(no_proxy())));
    }
    if cli.noproxy.is_none() {
        return Ok(builder);
    }
    // The environment's proxies, rebuilt so that --noproxy replaces NO_PROXY.
    builder = builder.no_proxy();
    type Make = fn(&str) -> reqwest::Result<Proxy>;
    let kinds: [(&str, Make); 3] = [
        ("http_proxy", |u| Proxy::http(u)),
        ("https_proxy", |u| Proxy::https(u)),
        ("all_proxy", |u| Proxy::all(u)),
    ];
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
            builder = builder.proxy(proxy.no_proxy(no_proxy()));
        }
    }
    Ok(builder)
}

fn tls(cli: &Cli, mut builder: ClientBuilder) -> anyhow::Result<ClientBuilder> {
    if let Some(path) = &cli.cacert {
        let pem = read(path, "--cacert")?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .ok()
            .filter(|c| !c.is_empty())
            .with_context(|| {
                format!("--cacert {}: expected PEM CA certificates", path.display())
            })?;
        builder = builder.tls_certs_only(certs);
    }
    if let Some(cert) = &cli.cert {
        let mut pem = read(cert, "--cert")?;
        if let Some(key) = &cli.key {
            pem.push(b'\n');
            pem.extend(read(key, "--key")?);
        }
        // reqwest's own message adds nothing to this one.
        let identity = reqwest::Identity::from_pem(&pem).map_err(|_| {
            anyhow::anyhow!(
                "--cert {}: expected a PEM certificate and its private key (in FILE or --key FILE)",
                cert.display()
            )
        })?;
        builder = builder.identity(identity);
    }
    Ok(builder)
}

fn read(path: &Path, flag: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("{flag}: cannot read {}", path.display()))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

/// `-4` / `-6`: the system resolver's answers of one address family only; a
/// name with none is a resolve failure, as with curl.
struct OneFamily(Family);

impl reqwest::dns::Resolve for OneFamily {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let family = self.0;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .filter(|a| a.is_ipv4() == (family == Family::V4))
                .collect();
            if found.is_empty() {
                let which = if family == Family::V4 { "IPv4" } else { "IPv6" };
                return Err(format!("{host} has no {which} address").into());
            }
            Ok(Box::new(found.into_iter()) as reqwest::dns::Addrs)
        })
    }
}
