//! Everything retry says and writes about a run. `log` owns how it speaks
//! (stderr text or JSON Lines, GitHub Actions annotations, run events, the
//! `--report` JSON); `files` owns how a file is written (one durable atomic
//! replacement) and the up-front checks of file flags. This module keeps what
//! may be shown of a URL. The engine emits events; it never formats them.

mod files;
mod log;

pub use files::{Replacement, check_file_target, open_in_place};
pub use log::*;

/// A URL as it may be shown anywhere (logs, JSON, the report, annotations, the
/// dry run): any user information is `***`, since a user name can be a token
/// as well as a password. Works on text that does not parse as a URL, too.
pub fn redact_url(text: &str) -> String {
    let Some(scheme_end) = text.find("://").map(|i| i + 3) else {
        return text.to_string();
    };
    let rest = &text[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}***{}", &text[..scheme_end], &rest[at..]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_information_in_urls_is_redacted() {
        assert_eq!(
            redact_url("http://user:SECRET@127.0.0.1:8080/x?a=b@c"),
            "http://***@127.0.0.1:8080/x?a=b@c"
        );
        assert_eq!(redact_url("https://tok@h/p"), "https://***@h/p");
        assert_eq!(redact_url("https://a:b@c@h"), "https://***@h");
        assert_eq!(redact_url("https://h/p@q"), "https://h/p@q");
        assert_eq!(redact_url("not a url"), "not a url");
    }
}
