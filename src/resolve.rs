//! Host names to addresses without the C library's name service switch: /etc/hosts,
//! then the nameservers /etc/resolv.conf lists (hickory-resolver), for HTTP targets and
//! proxies and for PostgreSQL hosts alike.
//!
//! retry is linked statically (no dynamic loader at start-up), and a statically linked
//! glibc loads NSS modules other than `files` and `dns` (`systemd`, `myhostname`,
//! `mdns`) with `dlopen`, which crashes the process. So retry never asks glibc: a name
//! that only such a module knows does not resolve (the README says so), and with no
//! readable /etc/resolv.conf only /etc/hosts and `localhost` resolve; retry never falls
//! back to a public nameserver.

use std::net::IpAddr;
use std::sync::OnceLock;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{LookupIpStrategy, ResolverConfig, ResolverOpts};
use hickory_resolver::net::runtime::TokioRuntimeProvider;

/// Which addresses a name may resolve to (`-4` / `-6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

/// The system's resolver configuration, read once; with no usable /etc/resolv.conf,
/// no nameserver (and the reason, for errors), never a public one.
struct System {
    config: ResolverConfig,
    options: ResolverOpts,
    no_dns: Option<String>,
}

fn system() -> &'static System {
    static SYSTEM: OnceLock<System> = OnceLock::new();
    SYSTEM.get_or_init(|| match hickory_resolver::system_conf::read_system_conf() {
        Ok((config, options)) => System {
            config,
            options,
            no_dns: None,
        },
        Err(e) => System {
            config: ResolverConfig::from_parts(None, vec![], vec![]),
            options: ResolverOpts::default(),
            no_dns: Some(format!("/etc/resolv.conf: {e}")),
        },
    })
}

/// A resolver with the system's configuration, for `family`.
fn resolver(family: Option<Family>) -> Result<TokioResolver, String> {
    let system = system();
    let mut options = system.options.clone();
    // getaddrinfo's order for a host with both: IPv6 first; connecting tries them all.
    options.ip_strategy = match family {
        None => LookupIpStrategy::Ipv6AndIpv4,
        Some(Family::V4) => LookupIpStrategy::Ipv4Only,
        Some(Family::V6) => LookupIpStrategy::Ipv6Only,
    };
    let mut builder =
        TokioResolver::builder_with_config(system.config.clone(), TokioRuntimeProvider::default());
    *builder.options_mut() = options;
    builder
        .build()
        .map_err(|e| format!("cannot set up name resolution: {e}"))
}

/// The addresses of `host` (a name or an IP literal), of `family` when given.
pub async fn lookup(host: &str, family: Option<Family>) -> Result<Vec<IpAddr>, String> {
    // Brackets are URL syntax for IPv6 literals.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return match family {
            Some(Family::V4) if !ip.is_ipv4() => Err(format!("{host} is not an IPv4 address")),
            Some(Family::V6) if !ip.is_ipv6() => Err(format!("{host} is not an IPv6 address")),
            _ => Ok(vec![ip]),
        };
    }
    let found = resolver(family)?
        .lookup_ip(bare)
        .await
        .map_err(|e| match &system().no_dns {
            Some(why) => format!("cannot resolve {host}: {e} (no nameserver: {why})"),
            None => format!("cannot resolve {host}: {e}"),
        })?;
    let addrs: Vec<IpAddr> = found.iter().collect();
    if addrs.is_empty() {
        let which = match family {
            Some(Family::V4) => "IPv4 address",
            Some(Family::V6) => "IPv6 address",
            None => "address",
        };
        return Err(format!("{host} has no {which}"));
    }
    Ok(addrs)
}

/// `lookup` from code that is not async, on this thread's runtime.
#[cfg(test)]
pub fn lookup_blocking(host: &str) -> Result<Vec<IpAddr>, String> {
    let bound = crate::wait::Bound::signals_only();
    crate::wait::block_on(lookup(host, None), &bound)
        .map_err(|ended| format!("cannot resolve {host}: {ended}"))?
}

/// For reqwest: every name the HTTP client connects to, the target's and a proxy's.
pub struct HttpResolver(pub Option<Family>);

impl reqwest::dns::Resolve for HttpResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let family = self.0;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = lookup(&host, family).await?;
            let addrs = addrs.into_iter().map(|ip| std::net::SocketAddr::new(ip, 0));
            Ok(Box::new(addrs) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_need_no_lookup_and_respect_the_family() {
        assert_eq!(
            lookup_blocking("127.0.0.1").unwrap(),
            vec![IpAddr::from([127, 0, 0, 1])]
        );
        assert_eq!(
            lookup_blocking("[::1]").unwrap(),
            vec!["::1".parse::<IpAddr>().unwrap()]
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt.block_on(lookup("::1", Some(Family::V4))).unwrap_err();
        assert!(err.contains("not an IPv4"), "{err}");
    }

    #[test]
    fn localhost_resolves_to_loopback_without_nss() {
        let found = lookup_blocking("localhost").unwrap();
        assert!(!found.is_empty());
        assert!(found.iter().all(|ip| ip.is_loopback()), "{found:?}");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let v4 = rt.block_on(lookup("localhost", Some(Family::V4))).unwrap();
        assert!(v4.iter().all(|ip| ip.is_ipv4()), "{v4:?}");
    }
}
