//! `-w/--write-out`: curl's format, read (from the flag, `@FILE` or `@-`) and parsed
//! once before anything runs, so that an unknown variable is a usage error. Rendering
//! it after the final attempt is [`exec::http`](crate::exec::http)'s work.

use std::io::{self, Read};

use anyhow::{Context, bail};

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

/// A piece of the format: text, a variable (`%{name}`) or a response header
/// (`%header{name}`).
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    Text(Vec<u8>),
    Var(&'static str),
    Header(String),
}

/// A parsed `-w` format.
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

    /// The format's pieces, in order.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }
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
}
