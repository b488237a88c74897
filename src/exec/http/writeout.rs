//! `-w/--write-out` rendered after the final attempt from what that attempt left in a
//! `Transfer` (the format comes parsed from [`config::http`](crate::config::http)), and `-D/--dump-header`,
//! which writes the same attempt's header blocks.

use std::io::{self, Write};
use std::time::Duration;

use anyhow::Context;
use reqwest::header::HeaderMap;

use crate::config::http::{HeaderDump, Piece, WriteOut};
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

/// Writes `format` to stdout (or stderr after `%{stderr}`).
pub fn write(format: &WriteOut, transfer: &Transfer, ending: &Ending<'_>) -> io::Result<()> {
    let mut to_stderr = false;
    let mut out = io::stdout().lock();
    let mut err = io::stderr().lock();
    for piece in format.pieces() {
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
