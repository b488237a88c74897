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
}
