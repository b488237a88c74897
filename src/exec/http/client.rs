//! The reqwest client, built from the typed `ClientSettings`: decoding,
//! proxies, certificates, protocol versions, name resolution and Unix sockets;
//! and what those settings (and `-u`) change, for `--dry-run`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use anyhow::Context;
use reqwest::ClientBuilder;

use crate::config::http::{ACCEPT_ENCODINGS, ClientSettings, HttpVersion, ProxyChoice};
use crate::domain::Family;
use crate::resolve::HttpResolver;

/// The client every attempt uses.
pub fn build(settings: &ClientSettings) -> anyhow::Result<reqwest::Client> {
    // Redirects are followed by `redirect`, so that every response of a chain is seen.
    // Header names go out as curl sends them (User-Agent, not user-agent); the HTTP
    // stack cannot keep a user's own case, so theirs are Title-Cased too.
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .http1_title_case_headers()
        .tls_danger_accept_invalid_certs(settings.insecure);
    if let Some(t) = settings.connect_timeout {
        builder = builder.connect_timeout(t);
    }
    builder = if settings.compressed {
        builder.gzip(true).deflate(true).brotli(true).zstd(true)
    } else {
        // Without --compressed nothing is asked for and nothing is decoded, as with curl.
        builder.no_gzip().no_deflate().no_brotli().no_zstd()
    };
    builder = proxies(&settings.proxy, builder);
    match super::tls::config(settings)? {
        Some(tls) => builder = builder.tls_backend_preconfigured(tls),
        None => {
            if let Some(client) = &settings.identity {
                builder = builder.identity(client.identity.clone());
            }
        }
    }
    builder = match settings.version {
        HttpVersion::Any
        | HttpVersion::Http2 {
            prior_knowledge: false,
        } => builder,
        HttpVersion::Http1Only => builder.http1_only(),
        HttpVersion::Http2 {
            prior_knowledge: true,
        } => builder.http2_prior_knowledge(),
    };
    for (host, addrs) in &settings.resolve {
        builder = builder.resolve_to_addrs(host, addrs);
    }
    // Names never go to glibc (see `resolve`): `-4` / `-6` narrow this resolver's answers.
    let names = settings.family.or(settings.socks4.then_some(Family::V4));
    builder = builder.dns_resolver(Arc::new(HttpResolver(names)));
    if let Some(family) = settings.family {
        let local: IpAddr = match family {
            // The unspecified address of the family: the system picks the local one.
            Family::V4 => Ipv4Addr::from(0u32).into(),
            Family::V6 => Ipv6Addr::from(0u128).into(),
        };
        builder = builder.local_address(local);
    }
    if let Some(path) = &settings.unix_socket {
        builder = unix_socket(builder, path)?;
    }
    builder.build().context("cannot set up the HTTP client")
}

/// Connects through the Unix domain socket `path` (`--unix-socket`).
#[cfg(unix)]
fn unix_socket(builder: ClientBuilder, path: &std::path::Path) -> anyhow::Result<ClientBuilder> {
    Ok(builder.unix_socket(path))
}

/// The HTTP client has no Unix domain sockets on Windows.
#[cfg(windows)]
fn unix_socket(_builder: ClientBuilder, _path: &std::path::Path) -> anyhow::Result<ClientBuilder> {
    anyhow::bail!(
        "--unix-socket: not available on Windows (the HTTP client connects over TCP only)"
    )
}

fn proxies(choice: &ProxyChoice, builder: ClientBuilder) -> ClientBuilder {
    match choice {
        ProxyChoice::Environment => builder,
        ProxyChoice::Direct => builder.no_proxy(),
        ProxyChoice::Given { proxy, .. } => builder.proxy(*proxy.clone()),
        ProxyChoice::Listed(proxies) => proxies
            .iter()
            .fold(builder.no_proxy(), |b, proxy| b.proxy(proxy.clone())),
    }
}

/// What curl's request options change, for `--dry-run`; secrets as `***`.
pub fn describe(settings: &ClientSettings, shown_user: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(user) = shown_user {
        out.push(format!(
            "Basic authentication as {user} (-u); not sent to another host after a redirect"
        ));
    }
    out.push(if settings.compressed {
        format!("--compressed: Accept-Encoding: {ACCEPT_ENCODINGS}; the body is decoded")
    } else {
        "no Accept-Encoding is sent and the body is never decoded (--compressed asks and decodes)"
            .into()
    });
    if let ProxyChoice::Given { url, .. } = &settings.proxy {
        out.push(format!(
            "proxy {} (-x) instead of the environment's",
            crate::domain::redact_url(url)
        ));
    }
    if let Some(path) = &settings.unix_socket {
        out.push(format!(
            "connections go to the Unix socket {}",
            path.display()
        ));
    }
    match settings.version {
        HttpVersion::Any => {}
        HttpVersion::Http1Only => out.push("HTTP/1.1 only (--http1.1)".into()),
        HttpVersion::Http2 { .. } => out.push("HTTP/2 (--http2): offered first by ALPN over https://, prior knowledge (h2c) over http://".into()),
    }
    out
}
