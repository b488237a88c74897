//! `-w/--write-out`: curl's format, parsed once before anything runs (an unknown
//! variable is a usage error), rendered after the final attempt from what that
//! attempt left in a `Transfer`. Also `-D/--dump-header`, which writes the same
//! attempt's header blocks.

use std::io::{self, Read, Write};
use std::time::Duration;

use anyhow::{Context, bail};
use reqwest::header::HeaderMap;

use crate::config::http::HeaderDump;
use crate::domain::ExitStatus;

/// What the final attempt left for `-w` and `-D`.
#[derive(Default, Clone, Debug)]
pub struct Transfer {
    /// Final response status; 0 when no response came.
    pub status: u16,
    pub url: String,
    pub method: String,
    pub redirects: u32,
    pub size_download: u64,
    /// Every header block of the chain, as shown by -i.
    pub heads: Vec<u8>,
    /// The final response's headers.
    pub headers: HeaderMap,
    pub elapsed: Duration,
}

/// How the run ended, for `exitcode`, `errormsg` and `num_retries`.
pub struct Ending<'a> {
    pub exit_code: ExitStatus,
    pub error: &'a str,
    pub retries: u32,
}

/// Variables `-w` knows (curl(1) "--write-out").
const VARIABLES: &[&str] = &[
    "http_code",
    "response_code",
    "url_effective",
    "time_total",
    "size_download",
    "size_header",
    "num_redirects",
    "content_type",
    "exitcode",
    "errormsg",
    "num_retries",
    "method",
    "stdout",
    "stderr",
];

#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Text(Vec<u8>),
    Var(&'static str),
    Header(String),
}

#[derive(Clone, Debug)]
pub struct WriteOut {
    pieces: Vec<Piece>,
}

impl WriteOut {
    /// `-w FORMAT`, `-w @FILE` or `-w @-` (stdin).
    pub fn new(arg: &str) -> anyhow::Result<Self> {
        let format = match arg.strip_prefix('@') {
            Some("-") => {
                let mut text = String::new();
                io::stdin()
                    .read_to_string(&mut text)
                    .context("-w/--write-out @-: cannot read stdin")?;
                text
            }
            Some(path) => std::fs::read_to_string(path)
                .with_context(|| format!("-w/--write-out: cannot read {path}"))?,
            None => arg.to_string(),
        };
        Ok(WriteOut {
            pieces: parse(&format)?,
        })
    }

    /// Writes the format to stdout (or stderr after `%{stderr}`).
    pub fn write(&self, transfer: &Transfer, ending: &Ending<'_>) -> io::Result<()> {
        let mut to_stderr = false;
        let mut out = io::stdout().lock();
        let mut err = io::stderr().lock();
        for piece in &self.pieces {
            let bytes = match piece {
                Piece::Var("stdout") => {
                    to_stderr = false;
                    continue;
                }
                Piece::Var("stderr") => {
                    to_stderr = true;
                    continue;
                }
                Piece::Text(text) => text.clone(),
                Piece::Var(name) => value(name, transfer, ending).into_bytes(),
                Piece::Header(name) => header_value(&transfer.headers, name).into_bytes(),
            };
            if to_stderr {
                err.write_all(&bytes)?;
            } else {
                out.write_all(&bytes)?;
            }
        }
        out.flush()?;
        err.flush()
    }
}

fn value(name: &str, t: &Transfer, ending: &Ending<'_>) -> String {
    match name {
        "http_code" | "response_code" => format!("{:03}", t.status),
        "url_effective" => t.url.clone(),
        "time_total" => format!("{:.6}", t.elapsed.as_secs_f64()),
        "size_download" => t.size_download.to_string(),
        "size_header" => t.heads.len().to_string(),
        "num_redirects" => t.redirects.to_string(),
        "content_type" => header_value(&t.headers, "content-type"),
        "exitcode" => ending.exit_code.to_string(),
        "errormsg" => ending.error.to_string(),
        "num_retries" => ending.retries.to_string(),
        "method" => t.method.clone(),
        _ => String::new(),
    }
}

fn header_value(headers: &HeaderMap, name: &str) -> String {
    let values: Vec<String> = headers
        .get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    values.join(", ")
}

/// curl's format: `%{name}`, `%header{name}`, `%%`, and the escapes \n \r \t \\.
fn parse(format: &str) -> anyhow::Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut text = Vec::new();
    let mut rest = format;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("%{") {
            let (name, tail) = after
                .split_once('}')
                .with_context(|| format!("-w/--write-out: '%{{{after}' has no closing '}}'"))?;
            let Some(known) = VARIABLES.iter().find(|v| **v == name) else {
                bail!(
                    "-w/--write-out: unknown variable '{name}'; known: {}, %header{{NAME}}",
                    VARIABLES.join(", ")
                );
            };
            flush(&mut pieces, &mut text);
            pieces.push(Piece::Var(known));
            rest = tail;
        } else if let Some(after) = rest.strip_prefix("%header{") {
            let (name, tail) = after
                .split_once('}')
                .context("-w/--write-out: '%header{' has no closing '}'")?;
            flush(&mut pieces, &mut text);
            pieces.push(Piece::Header(name.to_ascii_lowercase()));
            rest = tail;
        } else if let Some(tail) = rest.strip_prefix("%%") {
            text.push(b'%');
            rest = tail;
        } else if let Some(tail) = rest.strip_prefix('\\').filter(|t| !t.is_empty()) {
            let escaped = match tail.as_bytes()[0] {
                b'n' => Some(b'\n'),
                b'r' => Some(b'\r'),
                b't' => Some(b'\t'),
                b'\\' => Some(b'\\'),
                _ => None,
            };
            match escaped {
                Some(byte) => {
                    text.push(byte);
                    rest = &tail[1..];
                }
                None => {
                    text.push(b'\\');
                    rest = tail;
                }
            }
        } else {
            let mut buf = [0; 4];
            text.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            rest = &rest[c.len_utf8()..];
        }
    }
    flush(&mut pieces, &mut text);
    Ok(pieces)
}

fn flush(pieces: &mut Vec<Piece>, text: &mut Vec<u8>) {
    if !text.is_empty() {
        pieces.push(Piece::Text(std::mem::take(text)));
    }
}

/// `-D FILE` (or `-D -` for stdout): the final attempt's header blocks.
pub fn dump_headers(target: &HeaderDump, heads: &[u8]) -> anyhow::Result<()> {
    match target {
        HeaderDump::Stdout => {
            let mut out = io::stdout().lock();
            out.write_all(heads)
                .and_then(|()| out.flush())
                .context("-D/--dump-header: cannot write to stdout")
        }
        HeaderDump::File(path) => std::fs::write(path, heads)
            .with_context(|| format!("-D/--dump-header: cannot write {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_like_curls() {
        let pieces = parse("%{http_code}\\n100%% %header{ETag}\\x").unwrap();
        assert_eq!(
            pieces,
            vec![
                Piece::Var("http_code"),
                Piece::Text(b"\n100% ".to_vec()),
                Piece::Header("etag".into()),
                Piece::Text(b"\\x".to_vec()),
            ]
        );
        let err = parse("%{time_connect}").unwrap_err().to_string();
        assert!(err.contains("unknown variable 'time_connect'"), "{err}");
        assert!(parse("%{http_code").is_err());
    }

    #[test]
    fn values_are_curls() {
        let t = Transfer {
            status: 0,
            elapsed: Duration::from_millis(1500),
            ..Transfer::default()
        };
        let ending = Ending {
            exit_code: ExitStatus::new(7),
            error: "refused",
            retries: 2,
        };
        assert_eq!(value("http_code", &t, &ending), "000");
        assert_eq!(value("time_total", &t, &ending), "1.500000");
        assert_eq!(value("num_retries", &t, &ending), "2");
        assert_eq!(value("exitcode", &t, &ending), "7");
    }
}
