//! The crontab's bytes, read so that nothing can hang or exhaust the reader: the file is
//! opened without blocking (a FIFO with no writer would block an open) and refused unless
//! it is a regular file (a symbolic link to one is followed, as Kubernetes mounts a
//! ConfigMap), no larger than [`MAX_BYTES`], with no NUL byte anywhere; a line that runs
//! must be UTF-8 (a comment may hold any other byte). Each refusal names `FILE` or
//! `FILE:LINE`, and quotes a line of the crontab only once the file is known to be one.

use std::io::Read;
use std::path::Path;

/// The largest crontab read: a larger file is no crontab a person wrote.
pub const MAX_BYTES: u64 = 1 << 20;

/// The text of a crontab, its lines numbered from 1.
#[derive(Debug)]
pub struct Text {
    lines: Vec<(usize, String)>,
}

impl Text {
    /// The lines that are not blank and not comments, trimmed, with their numbers.
    pub fn lines(&self) -> impl Iterator<Item = (usize, &str)> {
        self.lines.iter().map(|(n, l)| (*n, l.as_str()))
    }
}

/// Reads `path` (shown as `shown`) into the lines that run.
pub fn read(path: &Path, shown: &str) -> anyhow::Result<Text> {
    let file = crate::sys::open_nonblocking(path)
        .map_err(|e| anyhow::anyhow!("--crontab {shown}: cannot read it: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| anyhow::anyhow!("--crontab {shown}: cannot read it: {e}"))?;
    if !meta.is_file() {
        anyhow::bail!(
            "--crontab {shown}: not a regular file but {}; give the path of a crontab file",
            crate::sys::describe_kind(meta.file_type())
        );
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(MAX_BYTES)).unwrap_or(0));
    // One byte past the limit tells a file that grew beyond it while it was read.
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow::anyhow!("--crontab {shown}: cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_BYTES {
        anyhow::bail!(
            "--crontab {shown}: larger than {} MiB; a crontab is a short file of job lines",
            MAX_BYTES >> 20
        );
    }
    split(&bytes, shown)
}

/// The lines of `bytes` that run; a NUL byte, or a running line that is not UTF-8, is
/// refused naming `FILE:LINE`.
fn split(bytes: &[u8], shown: &str) -> anyhow::Result<Text> {
    let mut lines = Vec::new();
    for (index, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let number = index + 1;
        if raw.contains(&0) {
            anyhow::bail!(
                "{shown}:{number}: a NUL byte; a crontab is text, and no command can hold one"
            );
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let trimmed = raw.trim_ascii();
        if trimmed.is_empty() || trimmed.starts_with(b"#") {
            continue;
        }
        match std::str::from_utf8(trimmed) {
            Ok(text) => lines.push((number, text.to_string())),
            Err(e) => anyhow::bail!(
                "{shown}:{number}: not UTF-8 (byte {} of the line); save the file as UTF-8",
                e.valid_up_to() + 1
            ),
        }
    }
    Ok(Text { lines })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(text: &Text) -> Vec<(usize, &str)> {
        text.lines().collect()
    }

    #[test]
    fn blank_lines_and_comments_are_left_out_and_lines_keep_their_numbers() {
        let text = split(
            b"# a comment\n\n  0 3 * * * x\r\n\t# \xff any byte\n@daily y",
            "f",
        )
        .unwrap();
        assert_eq!(numbered(&text), [(3, "0 3 * * * x"), (5, "@daily y")]);
    }

    #[test]
    fn a_nul_or_a_running_line_that_is_not_utf8_is_refused_naming_the_line() {
        let err = split(b"@daily x\n# c\0mment\n", "tab").unwrap_err();
        assert!(err.to_string().starts_with("tab:2: a NUL byte"), "{err}");
        let err = split(b"@daily x\n@daily \xe9cho\n", "tab").unwrap_err();
        assert!(
            err.to_string().starts_with("tab:2: not UTF-8 (byte 8"),
            "{err}"
        );
    }
}
