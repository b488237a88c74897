//! The request body from curl's body options, built once: `-d`-style data joined
//! with `&` (or moved into the query string by `-G`), `--json`, and `-F`'s
//! multipart form, boundary included, so every attempt sends the same bytes.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use bytes::Bytes;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};
use reqwest::header::HeaderValue;

use crate::cli::{Cli, curl::DataArg, curl::DataKind, curl::FormContent, curl::FormField};

/// What curl leaves unescaped in `--data-urlencode`: letters, digits and `-._~`.
const URLENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The body and where it goes.
#[derive(Default)]
pub struct BodyParts {
    pub bytes: Option<Bytes>,
    pub content_type: Option<HeaderValue>,
    /// `-G`: the data for the query string instead of the body.
    pub query: Option<String>,
}

/// stdin is read at most once: curl gives `@-` the whole of it the first time.
#[derive(Default)]
struct Stdin {
    taken: bool,
    dry_run: bool,
}

impl Stdin {
    fn read(&mut self, flag: &str) -> anyhow::Result<Vec<u8>> {
        let mut buf = Vec::new();
        if !std::mem::replace(&mut self.taken, true) && !self.dry_run {
            std::io::stdin()
                .read_to_end(&mut buf)
                .with_context(|| format!("{flag} @-: cannot read stdin"))?;
        }
        Ok(buf)
    }
}

pub fn build(cli: &Cli) -> anyhow::Result<BodyParts> {
    let mut stdin = Stdin {
        taken: false,
        dry_run: cli.output.dry_run,
    };
    if let Some(json) = &cli.http.json {
        return Ok(BodyParts {
            bytes: Some(source(json, "--json", &mut stdin)?.into()),
            content_type: Some(HeaderValue::from_static("application/json")),
            query: None,
        });
    }
    if !cli.curl.form.is_empty() {
        return multipart(&cli.curl.form, &mut stdin);
    }
    if cli.http.data_args.is_empty() {
        return Ok(BodyParts::default());
    }
    let mut joined = Vec::new();
    for (i, arg) in cli.http.data_args.iter().enumerate() {
        if i > 0 {
            joined.push(b'&');
        }
        joined.extend(data_part(arg, &mut stdin)?);
    }
    if cli.curl.get {
        let query = String::from_utf8(joined).map_err(|_| {
            anyhow::anyhow!("-G/--get: the data is not UTF-8 text, so it cannot go in a URL")
        })?;
        return Ok(BodyParts {
            query: Some(query),
            ..BodyParts::default()
        });
    }
    Ok(BodyParts {
        bytes: Some(joined.into()),
        content_type: Some(HeaderValue::from_static(
            "application/x-www-form-urlencoded",
        )),
        query: None,
    })
}

/// One `-d`-style argument's bytes, as curl makes them.
fn data_part(arg: &DataArg, stdin: &mut Stdin) -> anyhow::Result<Vec<u8>> {
    let flag = arg.kind.flag();
    let value = arg.value.as_str();
    match arg.kind {
        DataKind::Raw => Ok(value.as_bytes().to_vec()),
        DataKind::Binary => source(value, flag, stdin),
        DataKind::Data => {
            let mut bytes = source(value, flag, stdin)?;
            if value.starts_with('@') {
                bytes.retain(|b| *b != b'\r' && *b != b'\n');
            }
            Ok(bytes)
        }
        DataKind::UrlEncode => urlencoded(value, stdin),
    }
}

/// `--data-urlencode`: content, =content, name=content, @file, name@file.
fn urlencoded(value: &str, stdin: &mut Stdin) -> anyhow::Result<Vec<u8>> {
    let flag = DataKind::UrlEncode.flag();
    let (name, content) = match value.find(['=', '@']) {
        Some(at) if value.as_bytes()[at] == b'@' => {
            let path = &value[at..];
            (&value[..at], source(path, flag, stdin)?)
        }
        Some(at) => (&value[..at], value.as_bytes()[at + 1..].to_vec()),
        None => ("", value.as_bytes().to_vec()),
    };
    let encoded = encode(&content);
    Ok(if name.is_empty() {
        encoded.into_bytes()
    } else {
        format!("{name}={encoded}").into_bytes()
    })
}

/// curl's escaping for `--data-urlencode`: a space becomes `+`.
fn encode(bytes: &[u8]) -> String {
    percent_encoding::percent_encode(bytes, URLENCODE)
        .to_string()
        .replace("%20", "+")
}

/// DATA as given, or the bytes of `@FILE` / `@-`.
fn source(arg: &str, flag: &str, stdin: &mut Stdin) -> anyhow::Result<Vec<u8>> {
    match arg.strip_prefix('@') {
        None => Ok(arg.as_bytes().to_vec()),
        Some("-") => stdin.read(flag),
        Some("") => anyhow::bail!("{flag} @: expected @FILE or @- after @"),
        Some(path) => std::fs::read(path).with_context(|| format!("{flag}: cannot read {path}")),
    }
}

/// `-F`: the multipart body made once with reqwest's form encoder (names and
/// file names as given, as curl sends them), then kept as bytes.
fn multipart(fields: &[FormField], stdin: &mut Stdin) -> anyhow::Result<BodyParts> {
    use reqwest::multipart::{Form, Part};
    let mut form = Form::new().percent_encode_noop();
    for field in fields {
        let (mut part, guessed) = match &field.content {
            FormContent::Text(value) => (Part::text(value.clone()), None),
            FormContent::FileText(path) => (Part::bytes(read_form_file(path, stdin)?), None),
            FormContent::File(path) => {
                let part = Part::bytes(read_form_file(path, stdin)?).file_name(file_name(path));
                // curl guesses an upload's type from its name, except for stdin's.
                (part, (path != "-").then(|| guess_type(path)))
            }
        };
        if let Some(mime) = field.mime.as_deref().or(guessed) {
            part = part.mime_str(mime).map_err(|_| bad_type(&field.text))?;
        }
        if let Some(name) = &field.filename {
            part = part.file_name(name.clone());
        }
        form = form.part(field.name.clone(), part);
    }
    let content_type = HeaderValue::from_str(&format!(
        "multipart/form-data; boundary={}",
        form.boundary()
    ))
    .context("-F/--form: the boundary is not a header value")?;
    let bytes = collect(form)?;
    Ok(BodyParts {
        bytes: Some(bytes),
        content_type: Some(content_type),
        query: None,
    })
}

fn read_form_file(path: &str, stdin: &mut Stdin) -> anyhow::Result<Vec<u8>> {
    source(&format!("@{path}"), "-F/--form", stdin)
}

fn bad_type(field: &str) -> anyhow::Error {
    anyhow::anyhow!("-F/--form: '{field}': the type= value is not a MIME type such as text/plain")
}

/// The form's bytes: its parts are all in memory, so the stream is ready at once.
fn collect(form: reqwest::multipart::Form) -> anyhow::Result<Bytes> {
    use futures_util::StreamExt;
    // Every part is in memory: the stream is ready at once, on the thread's runtime.
    crate::wait::on_runtime(async {
        let mut stream = std::pin::pin!(form.into_stream());
        let mut out = Vec::new();
        while let Some(chunk) = stream.next().await {
            out.extend_from_slice(&chunk.context("-F/--form: cannot build the form")?);
        }
        Ok(Bytes::from(out))
    })
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

/// curl's own short table of upload types by extension; anything else is
/// application/octet-stream.
fn guess_type(path: &str) -> &'static str {
    let lower = path.to_ascii_lowercase();
    const TYPES: [(&str, &str); 10] = [
        (".gif", "image/gif"),
        (".jpg", "image/jpeg"),
        (".jpeg", "image/jpeg"),
        (".png", "image/png"),
        (".svg", "image/svg+xml"),
        (".txt", "text/plain"),
        (".htm", "text/html"),
        (".html", "text/html"),
        (".pdf", "application/pdf"),
        (".xml", "application/xml"),
    ];
    TYPES
        .iter()
        .find(|(ext, _)| lower.ends_with(ext))
        .map_or("application/octet-stream", |(_, mime)| mime)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(kind: DataKind, value: &str) -> Vec<u8> {
        let arg = DataArg {
            kind,
            value: value.into(),
        };
        data_part(&arg, &mut Stdin::default()).unwrap()
    }

    #[test]
    fn urlencode_forms_match_curl() {
        assert_eq!(part(DataKind::UrlEncode, "a b"), b"a+b");
        assert_eq!(part(DataKind::UrlEncode, "=c&d"), b"c%26d");
        assert_eq!(part(DataKind::UrlEncode, "n=v w~*"), b"n=v+w~%2A");
        assert_eq!(part(DataKind::Raw, "@not-a-file"), b"@not-a-file");
    }

    #[test]
    fn data_from_a_file_loses_newlines_but_binary_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"l1\nl2\r\n").unwrap();
        let at = format!("@{}", file.display());
        assert_eq!(part(DataKind::Data, &at), b"l1l2");
        assert_eq!(part(DataKind::Binary, &at), b"l1\nl2\r\n");
        let named = format!("n{at}");
        assert_eq!(part(DataKind::UrlEncode, &named), b"n=l1%0Al2%0D%0A");
    }

    #[test]
    fn upload_types_follow_curls_table() {
        assert_eq!(guess_type("a/B.TXT"), "text/plain");
        assert_eq!(guess_type("x.bin"), "application/octet-stream");
    }
}
