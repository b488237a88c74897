//! The request every attempt sends, built once from the command line: method,
//! URL, headers (defaults, curl's header options, `-H` lines and files) and the
//! body, read once so that every attempt sends the same bytes.

use std::path::Path;

use anyhow::{Context, bail};
use base64::Engine;
use reqwest::header::{
    ACCEPT, ACCEPT_ENCODING, AUTHORIZATION, CONTENT_TYPE, COOKIE, HeaderMap, HeaderName,
    HeaderValue, REFERER, USER_AGENT,
};
use reqwest::{Method, Url};

use super::upload::{Payload, Upload};
use super::{body, url as target};
use crate::cli::Cli;
use crate::config::KeyChoice;
use crate::domain::Protocols;
use crate::headers::{self, HeaderAction, HeaderLine};

/// What curl sends with `--compressed` when built with every decoder.
pub const ACCEPT_ENCODINGS: &str = "deflate, gzip, br, zstd";

#[derive(Clone)]
pub struct Request {
    pub method: Method,
    /// A malformed URL is the attempt's outcome (exit 3), not a usage error.
    pub url: Result<Url, String>,
    /// Every header but the run's idempotency key, which `key` asks for.
    pub headers: HeaderMap,
    pub body: Option<Payload>,
    /// `--idempotency-key`: whether the run's key is sent, under `key_header`.
    pub key: KeyChoice,
    /// The header that carries an idempotency key (given with `-H` or asked
    /// for with `--idempotency-key`), if any.
    pub key_header: Option<HeaderName>,
    /// `-u USER:PASSWORD` as it may be shown: `USER:***`.
    pub shown_user: Option<String>,
    /// `--proto`: the protocols the URL may use.
    pub protocols: Protocols,
    /// `--proto` and `--proto-redir` together: the protocols a redirect may use.
    pub redirect_protocols: Protocols,
    /// A `-H traceparent` line was given (a value or a removal): it wins over the
    /// attempt's own when the run is traced.
    pub own_traceparent: bool,
}

impl Request {
    pub fn from_cli(cli: &Cli, url: &str, key: KeyChoice) -> anyhow::Result<Request> {
        if !cli.curl.globoff {
            target::refuse_globs(url)?;
            if let Some(file) = &cli.curl.upload_file {
                target::refuse_file_globs(file)?;
            }
        }
        let body = body::build(cli)?;
        let upload = cli
            .curl
            .upload_file
            .as_deref()
            .map(|file| Upload::new(file, cli.output.dry_run))
            .transpose()?;
        let method = match &cli.http.method {
            Some(method) => method.clone(),
            None if upload.is_some() => Method::PUT,
            None if body.bytes.is_some() => Method::POST,
            None => Method::GET,
        };
        let mut headers = default_headers(body.content_type.clone(), cli.http.json.is_some());
        curl_headers(cli, &mut headers)?;
        let lines = user_lines(&cli.http.headers)?;
        apply_lines(&mut headers, &lines)?;
        let key_name = cli.http.idempotency_header.clone();
        let given = headers.contains_key(&key_name);
        if given && key != KeyChoice::Default {
            // The name as the -H line spells it.
            let spelled = lines
                .iter()
                .find(|line| key_name.as_str().eq_ignore_ascii_case(&line.name))
                .map_or(key_name.as_str(), |line| line.name.as_str());
            bail!(
                "both --idempotency-key and -H '{spelled}: ...' set the idempotency key; give it once"
            );
        }
        let key_header = (given || key != KeyChoice::Default).then_some(key_name);
        let own_traceparent = lines
            .iter()
            .any(|line| line.name.eq_ignore_ascii_case("traceparent"));
        let upload_name = upload.as_ref().and_then(Upload::file_name);
        let url = target::parse(url).map(|u| {
            let u = target::with_query(u, body.query.as_deref());
            match upload_name {
                Some(file) => target::with_upload_name(u, file),
                None => u,
            }
        });
        Ok(Request {
            method,
            url,
            headers,
            body: match upload {
                Some(upload) => Some(Payload::Upload(upload)),
                None => body.bytes.map(Payload::Bytes),
            },
            key,
            key_header,
            shown_user: cli.curl.user.as_deref().map(shown_user),
            protocols: cli.curl.proto.unwrap_or(Protocols::ALL),
            redirect_protocols: cli
                .curl
                .proto
                .unwrap_or(Protocols::ALL)
                .and(cli.curl.proto_redir.unwrap_or(Protocols::ALL)),
            own_traceparent,
        })
    }

    /// The headers with the run's idempotency key added, when `--idempotency-key` asks for it.
    pub fn with_run_key(mut self, run_key: &str) -> anyhow::Result<Request> {
        if let (Some(name), false) = (&self.key_header, self.key == KeyChoice::Default) {
            let value = HeaderValue::from_str(run_key)
                .context("--idempotency-key: not a valid header value")?;
            self.headers.insert(name.clone(), value);
        }
        Ok(self)
    }
}

fn default_headers(content_type: Option<HeaderValue>, json: bool) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        USER_AGENT,
        HeaderValue::from_static(concat!("retry/", env!("CARGO_PKG_VERSION"))),
    );
    if let Some(content_type) = content_type {
        headers.insert(CONTENT_TYPE, content_type);
    }
    if json {
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    }
    headers
}

/// The headers curl's options stand for (`-A`, `-e`, `-b`, `-u`, `--compressed`);
/// `-H` lines are applied after these and win, as in curl.
fn curl_headers(cli: &Cli, headers: &mut HeaderMap) -> anyhow::Result<()> {
    if let Some(agent) = &cli.curl.user_agent {
        if agent.is_empty() {
            headers.remove(USER_AGENT);
        } else {
            headers.insert(USER_AGENT, value(agent, "-A/--user-agent")?);
        }
    }
    if let Some(referer) = cli.curl.referer.as_deref().filter(|r| !r.is_empty()) {
        headers.insert(REFERER, value(referer, "-e/--referer")?);
    }
    if !cli.curl.cookie.is_empty() {
        let mut cookie = value(&cli.curl.cookie.join(";"), "-b/--cookie")?;
        cookie.set_sensitive(true);
        headers.insert(COOKIE, cookie);
    }
    if let Some(user) = &cli.curl.user {
        headers.insert(AUTHORIZATION, basic_auth(user)?);
    }
    if cli.curl.compressed {
        headers.insert(ACCEPT_ENCODING, HeaderValue::from_static(ACCEPT_ENCODINGS));
    }
    Ok(())
}

/// `-u USER:PASSWORD` as an Authorization header, marked sensitive.
fn basic_auth(user: &str) -> anyhow::Result<HeaderValue> {
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
    Ok(auth)
}

fn value(text: &str, flag: &str) -> anyhow::Result<HeaderValue> {
    HeaderValue::from_str(text).with_context(|| format!("{flag}: not a valid header value"))
}

fn shown_user(user: &str) -> String {
    let name = user.split_once(':').map_or(user, |(name, _)| name);
    format!("{name}:***")
}

/// Every `-H` argument, files (`@FILE`) expanded in place.
fn user_lines(args: &[String]) -> anyhow::Result<Vec<HeaderLine>> {
    let mut lines = Vec::new();
    for arg in args {
        match arg.strip_prefix('@') {
            Some(path) => lines.extend(read_header_file(Path::new(path))?),
            None => lines
                .push(headers::header_line(arg).map_err(|e| anyhow::anyhow!("-H/--header: {e}"))?),
        }
    }
    Ok(lines)
}

fn read_header_file(path: &Path) -> anyhow::Result<Vec<HeaderLine>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("-H @{}: cannot read the header file", path.display()))?;
    headers::header_file(&text).map_err(|e| anyhow::anyhow!("-H @{}: {e}", path.display()))
}

/// The user's headers replace the defaults of the same name; repeated names
/// are all sent, in order.
fn apply_lines(headers: &mut HeaderMap, lines: &[HeaderLine]) -> anyhow::Result<()> {
    let mut seen: Vec<HeaderName> = Vec::new();
    for line in lines {
        let name = HeaderName::from_bytes(line.name.as_bytes())
            .with_context(|| format!("-H: '{}' is not a header name", line.name))?;
        if !seen.contains(&name) {
            headers.remove(&name);
            seen.push(name.clone());
        }
        let value = match &line.value {
            HeaderAction::Set(v) => HeaderValue::from_str(v)
                .with_context(|| format!("-H: the value of {} is not valid", line.name))?,
            HeaderAction::Empty => HeaderValue::from_static(""),
            HeaderAction::Remove => continue,
        };
        headers.append(name, value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_is_shown_without_the_password() {
        assert_eq!(shown_user("me:secret:more"), "me:***");
        assert_eq!(shown_user("me:"), "me:***");
    }
}
