//! Host names to addresses as the system resolves them under `hosts: files dns`, for
//! HTTP targets, proxies and PostgreSQL hosts alike: the C library's `getaddrinfo`, and
//! with glibc its NSS `hosts` database set to `files dns` whatever /etc/nsswitch.conf
//! says ([`sys::configure_name_lookup`](crate::sys::configure_name_lookup); other systems' resolvers as they are set), so a name in
//! /etc/hosts is answered from there alone and other names go to the nameservers of
//! /etc/resolv.conf with its `search`, `ndots`, `timeout`, `attempts` and `rotate`, in
//! RFC 6724 order (and /etc/gai.conf's), as `getent ahosts` shows them.
//!
//! `files` and `dns` are built into glibc, so even a statically linked retry loads no
//! NSS module (a static glibc crashes loading `systemd` or `myhostname`). `getaddrinfo`
//! cannot be interrupted: it runs on a thread of its own, and a lookup that its caller
//! stops waiting for (a deadline, a signal) is abandoned; the thread ends when glibc's
//! own timeouts end it, or with the process. Bounding the wait is the caller's (see
//! [`wait::within`](crate::wait::within())); `localhost` and `*.localhost` not listed in /etc/hosts are loopback
//! here (RFC 6761) rather than a question to a nameserver.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::domain::Family;
use dns_lookup::{AddrInfoHints, LookupErrorKind};

/// The addresses of `host` (a name or an IP literal) in the order to try them, of
/// `family` when given (one family of the same answer). Dropping the future abandons
/// the lookup.
pub async fn lookup(host: &str, family: Option<Family>) -> Result<Vec<IpAddr>, String> {
    // Brackets are URL syntax for IPv6 literals.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return match family {
            Some(f) if !f.admits(&ip) => Err(format!("{host} is not an {} address", name_of(f))),
            _ => Ok(vec![ip]),
        };
    }
    let found = if is_localhost(bare) && !listed_in_hosts(bare) {
        vec![
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V4(Ipv4Addr::LOCALHOST),
        ]
    } else {
        system(bare)
            .await
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
    };
    let kept: Vec<IpAddr> = found
        .into_iter()
        .filter(|ip| family.is_none_or(|f| f.admits(ip)))
        .collect();
    if kept.is_empty() {
        let which = family.map_or(String::new(), |f| format!("{} ", name_of(f)));
        return Err(format!("cannot resolve {host}: it has no {which}address"));
    }
    Ok(kept)
}

fn name_of(family: Family) -> &'static str {
    match family {
        Family::V4 => "IPv4",
        Family::V6 => "IPv6",
    }
}

/// `lookup` from code that is not async, on this thread's runtime, until it ends or a
/// stopping signal.
#[cfg(test)]
pub fn lookup_blocking(host: &str) -> Result<Vec<IpAddr>, String> {
    let bound = crate::wait::Bound::signals_only();
    crate::wait::block_on(lookup(host, None), &bound)
        .map_err(|ended| format!("cannot resolve {host}: {ended}"))?
}

/// `getaddrinfo` on a thread of its own; the answer comes back through a channel, so
/// a caller that stops waiting leaves the thread to finish alone.
async fn system(name: &str) -> Result<Vec<IpAddr>, String> {
    // glibc's: `files dns`, whatever nsswitch.conf says, before the first lookup.
    crate::sys::configure_name_lookup();
    let (answer, answered) = tokio::sync::oneshot::channel();
    let owned = name.to_string();
    std::thread::Builder::new()
        .name("lookup".into())
        .spawn(move || {
            let _ = answer.send(getaddrinfo(&owned));
        })
        .map_err(|e| format!("cannot start a thread for the lookup: {e}"))?;
    answered
        .await
        .map_err(|_| "the lookup thread ended without an answer".to_string())?
}

/// glibc's answer for `name`, duplicates left out (an address listed twice in
/// /etc/hosts is tried once).
fn getaddrinfo(name: &str) -> Result<Vec<IpAddr>, String> {
    let hints = AddrInfoHints {
        socktype: crate::sys::SOCK_STREAM,
        // As `getent ahosts` asks: a family that no interface has a non-loopback
        // address of is left out (and not asked of the nameservers).
        flags: crate::sys::AI_ADDRCONFIG | crate::sys::AI_V4MAPPED,
        ..AddrInfoHints::default()
    };
    let answers = dns_lookup::getaddrinfo(Some(name), None, Some(hints))
        .map_err(|e| reason(e.kind()).map_or_else(|| e.to_string(), str::to_string))?;
    let mut addrs: Vec<IpAddr> = Vec::new();
    for answer in answers {
        let ip = answer.map_err(|e| e.to_string())?.sockaddr.ip();
        if !addrs.contains(&ip) {
            addrs.push(ip);
        }
    }
    Ok(addrs)
}

/// What a failed `getaddrinfo` means, in the user's terms.
fn reason(kind: LookupErrorKind) -> Option<&'static str> {
    Some(match kind {
        LookupErrorKind::NoName => {
            "no such name (neither /etc/hosts nor the nameservers of /etc/resolv.conf know it)"
        }
        LookupErrorKind::NoData => "the name has no address",
        LookupErrorKind::Again => {
            "no answer from the nameservers of /etc/resolv.conf (temporary failure in name resolution)"
        }
        LookupErrorKind::Fail => "the nameservers of /etc/resolv.conf failed",
        _ => return None,
    })
}

/// `localhost`, or a name under `.localhost` (RFC 6761), with or without a final dot.
fn is_localhost(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// Whether /etc/hosts lists `name`, as glibc's `files` matches it (any field after the
/// address, case aside; a final dot is part of the name).
fn listed_in_hosts(name: &str) -> bool {
    std::fs::read_to_string("/etc/hosts").is_ok_and(|text| hosts_lists(&text, name))
}

fn hosts_lists(text: &str, name: &str) -> bool {
    text.lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            // A line whose first field is no address is skipped, as glibc does.
            fields.next()?.parse::<IpAddr>().ok()?;
            Some(fields)
        })
        .any(|mut names| names.any(|n| n.eq_ignore_ascii_case(name)))
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

    fn on_runtime<T>(fut: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(fut)
    }

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
        let err = on_runtime(lookup("::1", Some(Family::V4))).unwrap_err();
        assert!(err.contains("not an IPv4"), "{err}");
    }

    #[test]
    fn localhost_resolves_to_loopback() {
        let found = lookup_blocking("localhost").unwrap();
        assert!(!found.is_empty());
        assert!(found.iter().all(|ip| ip.is_loopback()), "{found:?}");
        let v4 = on_runtime(lookup("localhost", Some(Family::V4))).unwrap();
        assert!(v4.iter().all(|ip| ip.is_ipv4()), "{v4:?}");
    }

    #[test]
    fn names_under_localhost_are_loopback_of_both_families() {
        let found = lookup_blocking("retry-unit.localhost.").unwrap();
        assert_eq!(
            found,
            [
                IpAddr::from(Ipv6Addr::LOCALHOST),
                IpAddr::from(Ipv4Addr::LOCALHOST)
            ]
        );
        let v6 = on_runtime(lookup("App.LOCALHOST", Some(Family::V6))).unwrap();
        assert_eq!(v6, [IpAddr::from(Ipv6Addr::LOCALHOST)]);
        assert!(!is_localhost("localhost.example"));
        assert!(!is_localhost("notlocalhost"));
    }

    #[test]
    fn hosts_lines_match_names_and_aliases_as_glibc_does() {
        let hosts = "# comment 127.0.0.9 commented.localhost\n\
                     127.0.0.2\tApp.localhost  alias.localhost # trailing\n\
                     not-an-address other.localhost\n\
                     ::1 six.localhost\n";
        assert!(hosts_lists(hosts, "app.localhost"));
        assert!(hosts_lists(hosts, "ALIAS.localhost"));
        assert!(hosts_lists(hosts, "six.localhost"));
        assert!(!hosts_lists(hosts, "commented.localhost"));
        assert!(!hosts_lists(hosts, "other.localhost"));
        assert!(
            !hosts_lists(hosts, "app.localhost."),
            "a final dot is not stripped"
        );
        assert!(!hosts_lists(hosts, "127.0.0.2"));
    }
}
