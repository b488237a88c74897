//! `postgres://` and `postgresql://` targets: the pure, total parser of the URL
//! (user, password, host, port, database, parameters, `#NAME`) into a
//! [`PgTarget`] that never shows its password and carries its leases' lifetime
//! (`--lease-ttl`), and the table markers live in. Connecting is [`db`](super::db)'s.

use std::fmt;
use std::net::Ipv6Addr;
use std::path::PathBuf;
use std::time::Duration;

use crate::domain::LeaseTtl;

/// The table `--once` markers and slot records live in.
pub const MARKER_TABLE: &str = "retry_once";

/// The URL parameters accepted after `?`.
const PARAMETERS: &str =
    "sslmode, sslrootcert, connect_timeout, application_name, host, port, user, password, dbname";

/// TLS use, as libpq's `sslmode` names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SslMode {
    /// Plain TCP.
    Disable,
    /// TLS when the server offers it, without checking its certificate.
    #[default]
    Prefer,
    /// TLS or fail, without checking the certificate.
    Require,
    /// TLS, certificate signed by `sslrootcert`; any host name.
    VerifyCa,
    /// TLS, certificate signed by `sslrootcert` and naming the host.
    VerifyFull,
}

impl SslMode {
    fn parse(text: &str) -> Result<SslMode, String> {
        match text {
            "disable" => Ok(SslMode::Disable),
            "prefer" => Ok(SslMode::Prefer),
            "require" => Ok(SslMode::Require),
            "verify-ca" => Ok(SslMode::VerifyCa),
            "verify-full" => Ok(SslMode::VerifyFull),
            other => Err(format!(
                "sslmode={other} is not supported; expected disable, prefer, require, verify-ca or verify-full"
            )),
        }
    }
}

/// A parsed `postgres://` target. Unset fields take libpq-like defaults when connecting.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PgTarget {
    pub user: Option<String>,
    pub password: Option<String>,
    /// A host name or address, or a directory holding the server's Unix socket.
    pub host: Option<String>,
    pub port: Option<u16>,
    pub dbname: Option<String>,
    pub sslmode: SslMode,
    pub sslrootcert: Option<PathBuf>,
    /// The limit on connecting and on every statement (`None`: the default, 10 s).
    pub connect_timeout: Option<Duration>,
    pub application_name: Option<String>,
    /// The lock name after `#`.
    pub name: Option<String>,
    /// The lifetime of a lease here (`--lease-ttl`, given by the configuration).
    pub lease_ttl: LeaseTtl,
}

/// Used when the URL sets no `connect_timeout`, as libpq's documentation suggests.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl PgTarget {
    /// What bounds connecting and every statement: the URL's `connect_timeout`.
    pub fn call_timeout(&self) -> Duration {
        self.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT)
    }

    /// The same server, database and credentials without the lock name: connections
    /// are shared by every lock, marker and fleet record of one URL.
    pub fn server(&self) -> PgTarget {
        PgTarget {
            name: None,
            ..self.clone()
        }
    }
}

/// Never shows the password.
impl fmt::Display for PgTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("postgres://")?;
        if let Some(user) = &self.user {
            write!(f, "{user}@")?;
        }
        match self.host.as_deref() {
            Some(host) if host.contains(':') => write!(f, "[{host}]")?,
            Some(host) if host.starts_with('/') => write!(f, "{}", host.replace('/', "%2F"))?,
            Some(host) => f.write_str(host)?,
            None => {}
        }
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        if let Some(db) = &self.dbname {
            write!(f, "/{db}")?;
        }
        if let Some(name) = &self.name {
            write!(f, "#{name}")?;
        }
        Ok(())
    }
}

/// Like `Display`: the password is never printed.
impl fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgTarget")
            .field("url", &self.to_string())
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("sslmode", &self.sslmode)
            .field("sslrootcert", &self.sslrootcert)
            .field("connect_timeout", &self.connect_timeout)
            .field("application_name", &self.application_name)
            .field("lease_ttl", &self.lease_ttl)
            .finish()
    }
}

/// What follows `postgres://` or `postgresql://` (scheme in any case).
pub fn strip_scheme(text: &str) -> Option<&str> {
    ["postgres://", "postgresql://"].iter().find_map(|scheme| {
        let head = text.get(..scheme.len())?;
        head.eq_ignore_ascii_case(scheme)
            .then(|| &text[scheme.len()..])
    })
}

/// Parses `[USER[:PASSWORD]@][HOST][:PORT][/DB][?K=V&…][#NAME]`, percent-decoding each part.
pub fn parse_url(rest: &str) -> Result<PgTarget, String> {
    let (rest, fragment) = split(rest, '#');
    let (rest, query) = split(rest, '?');
    let (authority, path) = split(rest, '/');
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let mut target = PgTarget::default();
    if let Some(userinfo) = userinfo {
        let (user, password) = split(userinfo, ':');
        target.user = non_empty(decode(user, "user")?);
        target.password = password.map(|p| decode(p, "password")).transpose()?;
    }
    (target.host, target.port) = parse_host_port(hostport)?;
    if let Some(path) = path {
        target.dbname = non_empty(decode(path, "database name")?);
    }
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("URL parameter {pair:?} has no =VALUE"))?;
        apply_parameter(&mut target, &decode(key, "parameter")?, decode(value, key)?)?;
    }
    if let Some(fragment) = fragment {
        let name = decode(fragment, "lock name")?;
        if name.is_empty() {
            return Err("empty lock name after #".into());
        }
        target.name = Some(name);
    }
    Ok(target)
}

/// Splits at the first `sep`; the separator is dropped.
fn split(text: &str, sep: char) -> (&str, Option<&str>) {
    match text.split_once(sep) {
        Some((head, tail)) => (head, Some(tail)),
        None => (text, None),
    }
}

fn non_empty(text: String) -> Option<String> {
    (!text.is_empty()).then_some(text)
}

/// Percent-decodes `text` (a URL part called `what` in errors) to UTF-8.
fn decode(text: &str, what: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent escape in the {what}; expected %XX"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("the {what} is not valid UTF-8 once decoded"))
}

fn parse_host_port(text: &str) -> Result<(Option<String>, Option<u16>), String> {
    if text.contains(',') {
        return Err("several hosts are not supported; give one HOST[:PORT]".into());
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (addr, after) = rest
            .split_once(']')
            .ok_or("an IPv6 address opened with [ is not closed with ]")?;
        addr.parse::<Ipv6Addr>()
            .map_err(|_| format!("[{addr}] is not an IPv6 address"))?;
        let port = match after {
            "" => None,
            _ => Some(parse_port(after.strip_prefix(':').ok_or_else(|| {
                format!("unexpected {after:?} after [{addr}]; expected :PORT")
            })?)?),
        };
        return Ok((Some(addr.to_string()), port));
    }
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(parse_port(port)?)),
        None => (text, None),
    };
    if host.contains(':') {
        return Err("an IPv6 address goes in brackets: postgres://[::1]:5432/db".into());
    }
    let host = decode(host, "host")?;
    check_host(&host)?;
    Ok((non_empty(host), port))
}

/// A host name or address, or an absolute socket directory (percent-encoded `/`).
fn check_host(host: &str) -> Result<(), String> {
    let name_chars = host
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if host.starts_with('/') || name_chars {
        Ok(())
    } else {
        // The value is not echoed: a misplaced password can end up here.
        Err("the host is not a host name, an address or a socket directory".into())
    }
}

fn parse_port(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err("the port is not a number from 1 to 65535".into()),
    }
}

fn apply_parameter(target: &mut PgTarget, key: &str, value: String) -> Result<(), String> {
    match key {
        "sslmode" => target.sslmode = SslMode::parse(&value)?,
        "sslrootcert" => target.sslrootcert = Some(PathBuf::from(value)),
        "connect_timeout" => {
            let secs = value.parse::<u32>().map_err(|_| {
                format!("connect_timeout={value:?} is not a whole number of seconds")
            })?;
            // libpq reads 0 as "wait forever"; every call retry makes has an end.
            if secs == 0 {
                return Err(
                    "connect_timeout=0 would wait forever; expected a whole number of seconds, 1 or more"
                        .into(),
                );
            }
            target.connect_timeout = Some(Duration::from_secs(u64::from(secs)));
        }
        "application_name" => target.application_name = Some(value),
        "host" => {
            check_host(&value)?;
            target.host = non_empty(value);
        }
        "port" => target.port = Some(parse_port(&value)?),
        "user" => target.user = non_empty(value),
        "password" => target.password = Some(value),
        "dbname" => target.dbname = non_empty(value),
        other => {
            return Err(format!(
                "unknown URL parameter {other:?}; accepted: {PARAMETERS}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PgTarget, String> {
        parse_url(strip_scheme(text).expect("a postgres URL"))
    }

    #[test]
    fn a_full_url_is_split_into_its_parts() {
        let t =
            parse("postgres://app:s%40cret@db.example:6543/jobs?sslmode=require#nightly%20report")
                .unwrap();
        assert_eq!(t.user.as_deref(), Some("app"));
        assert_eq!(t.password.as_deref(), Some("s@cret"));
        assert_eq!(t.host.as_deref(), Some("db.example"));
        assert_eq!(t.port, Some(6543));
        assert_eq!(t.dbname.as_deref(), Some("jobs"));
        assert_eq!(t.sslmode, SslMode::Require);
        assert_eq!(t.name.as_deref(), Some("nightly report"));
    }

    #[test]
    fn the_scheme_is_case_insensitive_and_has_two_spellings() {
        assert!(strip_scheme("POSTGRES://h/db").is_some());
        assert!(strip_scheme("postgresql://h/db").is_some());
        assert!(strip_scheme("postgre://h/db").is_none());
        assert!(strip_scheme("pö").is_none());
    }

    #[test]
    fn ipv6_hosts_and_socket_directories() {
        let t = parse("postgres://u@[::1]:5433/db").unwrap();
        assert_eq!((t.host.as_deref(), t.port), (Some("::1"), Some(5433)));
        let t = parse("postgres://u@%2Fvar%2Frun%2Fpostgresql/db").unwrap();
        assert_eq!(t.host.as_deref(), Some("/var/run/postgresql"));
        assert!(parse("postgres://u@::1/db").is_err());
        assert!(parse("postgres://u@[::1/db").is_err());
    }

    #[test]
    fn bad_parts_are_refused_with_a_reason() {
        for (url, says) in [
            ("postgres://u@h:0/db", "port"),
            ("postgres://u@h:99999/db", "port"),
            ("postgres://u@h1,h2/db", "several hosts"),
            ("postgres://u@h/db?sslmode=allow", "sslmode"),
            ("postgres://u@h/db?sslcert=x", "unknown URL parameter"),
            ("postgres://u@h/db?sslmode", "=VALUE"),
            ("postgres://u@h/db#", "empty lock name"),
            ("postgres://u@h/db%zz", "percent"),
            ("postgres://u@h/db%ff", "UTF-8"),
            ("postgres://u@h o/db", "host"),
            ("postgres://u@h/db?connect_timeout=0", "forever"),
            ("postgres://u@h/db?connect_timeout=-1", "whole number"),
        ] {
            let err = parse(url).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
    }

    #[test]
    fn errors_never_echo_what_may_be_a_password() {
        // An unescaped '/' in the password makes it look like a host and port.
        for url in [
            "postgres://app:hunter2/x@h/db",
            "postgres://app:x@h:hunter2/db",
            "postgres://u@hunter2 x/db",
        ] {
            let err = parse(url).unwrap_err();
            assert!(!err.contains("hunter2"), "{url}: {err}");
        }
    }

    #[test]
    fn the_password_is_never_displayed() {
        let t = parse("postgres://app:hunter2@h:5432/db?password=hunter3#job").unwrap();
        assert_eq!(t.to_string(), "postgres://app@h:5432/db#job");
        assert!(!format!("{t:?}").contains("hunter"));
    }
}
