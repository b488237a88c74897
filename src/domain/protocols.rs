//! curl's protocol filters (`--proto`, `--proto-redir`): which of the two
//! protocols retry speaks a URL or a redirect may use.

/// The protocols a request may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protocols {
    pub http: bool,
    pub https: bool,
}

/// Every protocol curl 7.88 knows (curl's man page, `--proto`): a name outside this
/// list is a typing mistake, refused rather than ignored.
const CURL_PROTOCOLS: &[&str] = &[
    "dict", "file", "ftp", "ftps", "gopher", "gophers", "http", "https", "imap", "imaps", "ldap",
    "ldaps", "mqtt", "pop3", "pop3s", "rtmp", "rtmpe", "rtmps", "rtmpt", "rtmpte", "rtmpts",
    "rtsp", "scp", "sftp", "smb", "smbs", "smtp", "smtps", "telnet", "tftp", "ws", "wss",
];

/// What a token does to the set, by its modifier.
#[derive(Clone, Copy)]
enum Action {
    /// `+` or none: permit, besides what is permitted.
    Allow,
    /// `-`: deny.
    Deny,
    /// `=`: permit only this.
    Only,
}

impl Protocols {
    /// Both protocols: curl's default for `--proto` and `--proto-redir` alike, as
    /// far as http and https go.
    pub const ALL: Protocols = Protocols {
        http: true,
        https: true,
    };

    /// Reads curl's syntax (`=https`, `-all,+https`, `http,https`): comma-separated
    /// names or `all`, each with modifiers `+` (permit), `-` (deny) or `=` (permit
    /// only this), read left to right from the default.
    pub fn parse(text: &str) -> Result<Protocols, String> {
        let mut set = Protocols::ALL;
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let name = token.trim_start_matches(['+', '-', '=']);
            let action = match token[..token.len() - name.len()].chars().last() {
                Some('-') => Action::Deny,
                Some('=') => Action::Only,
                _ => Action::Allow,
            };
            let name = name.to_ascii_lowercase();
            if name != "all" && !CURL_PROTOCOLS.contains(&name.as_str()) {
                return Err(format!(
                    "'{token}' names no protocol curl knows; expected a list such as =https, -all,+https or http,https"
                ));
            }
            set.apply(action, &name);
        }
        Ok(set)
    }

    fn apply(&mut self, action: Action, name: &str) {
        if let Action::Only = action {
            *self = Protocols {
                http: false,
                https: false,
            };
        }
        let on = !matches!(action, Action::Deny);
        match name {
            "all" => {
                self.http = on;
                self.https = on;
            }
            "http" => self.http = on,
            "https" => self.https = on,
            // Protocols retry does not speak change nothing it could send.
            _ => {}
        }
    }

    /// Whether a URL with `scheme` may be used.
    pub fn allows(self, scheme: &str) -> bool {
        match scheme {
            "http" => self.http,
            "https" => self.https,
            _ => false,
        }
    }

    /// Both filters at once: a redirect must pass `--proto` and `--proto-redir`.
    pub fn and(self, other: Protocols) -> Protocols {
        Protocols {
            http: self.http && other.http,
            https: self.https && other.https,
        }
    }

    /// "http and https", "https", or "none", for messages.
    pub fn describe(self) -> &'static str {
        match (self.http, self.https) {
            (true, true) => "http and https",
            (true, false) => "http only",
            (false, true) => "https only",
            (false, false) => "neither http nor https",
        }
    }
}

/// What to say of a command that was not found but reads as a URL retry would not
/// take as one: another scheme (`ftp://…`), or an address without its scheme
/// (`example.com/x`, `localhost:8080`, `127.0.0.1:8080/ok`). Text only: no name is
/// ever resolved.
pub fn url_hint(target: &str) -> Option<String> {
    if let Some((scheme, _)) = target.split_once("://") {
        let scheme_like = !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        return scheme_like.then(|| {
            format!(
                "{scheme}:// is not HTTP, and HTTP mode speaks only HTTP: only http:// and https:// URLs are requests"
            )
        });
    }
    address_like(target).then(|| {
        format!("did you mean http://{target}? only http:// and https:// select HTTP mode")
    })
}

/// File name endings that make `name.ext` a script, not a host.
const SCRIPT_ENDINGS: &[&str] = &[
    "sh", "bash", "py", "pl", "rb", "js", "jar", "exe", "bat", "ps1", "php", "lua", "tcl",
];

/// `HOST[:PORT][/PATH]`, where HOST is a dotted name, an IPv4 address, `[IPv6]` or
/// `localhost`; another single-label host needs a port.
fn address_like(target: &str) -> bool {
    if target.starts_with(['/', '.', '-']) || target.contains(char::is_whitespace) {
        return false;
    }
    let (authority, path) = match target.find(['/', '?']) {
        Some(at) => (&target[..at], Some(&target[at..])),
        None => (target, None),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') => (host, Some(port)),
        _ => (authority, None),
    };
    if port.is_some_and(|p| p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    let labels: Vec<&str> = host.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && !l.starts_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    let ipv4 = labels.len() == 4 && labels.iter().all(|l| l.parse::<u8>().is_ok());
    let ipv6 = host.starts_with('[') && host.ends_with(']') && host.len() > 2;
    let last = labels.last().copied().unwrap_or_default();
    let named = labels.len() >= 2
        && labels.iter().all(label_ok)
        && last.len() >= 2
        && last.bytes().all(|b| b.is_ascii_alphabetic())
        && (port.is_some() || path.is_some() || !SCRIPT_ENDINGS.contains(&last));
    // A single label with a path is as likely a relative path (`build/run`).
    let local = host.eq_ignore_ascii_case("localhost") && (port.is_some() || path.is_some());
    let single = labels.len() == 1 && label_ok(&host) && port.is_some();
    ipv4 || ipv6 || named || local || single
}

#[cfg(test)]
mod tests {
    use super::*;

    const HTTPS_ONLY: Protocols = Protocols {
        http: false,
        https: true,
    };

    #[test]
    fn curl_s_spellings_of_https_only() {
        for text in [
            "=https",
            "-all,+https",
            "-all,https",
            "-http",
            "=http,=https,-http",
        ] {
            assert_eq!(Protocols::parse(text), Ok(HTTPS_ONLY), "{text}");
        }
    }

    #[test]
    fn a_bare_name_adds_to_the_default_as_curl_reads_it() {
        assert_eq!(Protocols::parse("http,https"), Ok(Protocols::ALL));
        assert_eq!(Protocols::parse("=http,https"), Ok(Protocols::ALL));
        assert_eq!(Protocols::parse("ftp"), Ok(Protocols::ALL));
        assert_eq!(
            Protocols::parse("-all"),
            Ok(Protocols {
                http: false,
                https: false
            })
        );
        assert_eq!(
            Protocols::parse("=ftp").map(|p| p.allows("https")),
            Ok(false)
        );
    }

    #[test]
    fn unknown_names_are_refused() {
        let err = Protocols::parse("=htps").unwrap_err();
        assert!(err.contains("'=htps'"), "{err}");
    }

    #[test]
    fn a_redirect_passes_both_filters() {
        let redirect = Protocols::ALL.and(HTTPS_ONLY);
        assert!(redirect.allows("https") && !redirect.allows("http"));
        assert!(!Protocols::ALL.allows("ftp"));
    }

    #[test]
    fn addresses_without_a_scheme_are_told_of_http() {
        for target in [
            "example.com",
            "example.com/x",
            "localhost:8080",
            "localhost:8080/health",
            "127.0.0.1:8080/ok",
            "127.0.0.1",
            "[::1]:8080/x",
            "api.example.com:443",
        ] {
            let hint = url_hint(target).unwrap_or_default();
            assert!(
                hint.starts_with(&format!("did you mean http://{target}?")),
                "{target}: {hint}"
            );
        }
        for target in [
            "true",
            "deploy.sh",
            "./x.com",
            "/usr/bin/env",
            "make",
            "a b.com",
            "x:y",
            "localhost",
            "v1.2",
            "build/run",
        ] {
            assert_eq!(url_hint(target), None, "{target}");
        }
    }

    #[test]
    fn other_schemes_are_told_http_mode_speaks_only_http() {
        for target in ["ftp://example.com/x", "file:///etc/hosts", "ws://h:1/"] {
            let hint = url_hint(target).unwrap();
            assert!(
                hint.contains("HTTP mode speaks only HTTP"),
                "{target}: {hint}"
            );
        }
    }
}
