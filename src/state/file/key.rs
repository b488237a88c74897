//! A `--once` key (or a slot's `JOB@SLOT`) as the name of its marker file in a state
//! directory: a reversible escape, the way back, and the length a file name allows.

/// Longest file name most file systems take (NAME_MAX).
const NAME_MAX: usize = 255;

/// What a key's file names add to the escaped key: `.` + `.lock`.
const NAME_OVERHEAD: usize = 6;

/// Whether a character may stand for itself in a marker's file name.
fn plain(c: char, first: bool) -> bool {
    let special = matches!(c, '/' | '%' | '\\' | '*' | '?' | '"' | '<' | '>' | '|');
    !(special || c.is_control() || c.is_whitespace() || (first && c == '.'))
}

/// The file-name form of a key: reversible percent-encoding of `/`, `%`, whitespace,
/// control and shell-glob characters and a leading `.`; everything else kept as is.
pub fn escape_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for (i, c) in key.chars().enumerate() {
        if plain(c, i == 0) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// The key a marker file name stands for (`KEY.json` → KEY), if it is one.
pub fn key_from_file_name(name: &str) -> Option<String> {
    let escaped = name.strip_suffix(".json")?;
    let bytes = escaped.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = escaped.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Refuses a key whose marker file name would be too long.
pub fn check_key(key: &str) -> Result<(), String> {
    let len = escape_key(key).len();
    if len + NAME_OVERHEAD > NAME_MAX {
        return Err(format!(
            "key {key:?} makes a file name of {len} bytes after escaping; file markers allow at most {} bytes (--state postgres://… takes any key up to 200 characters)",
            NAME_MAX - NAME_OVERHEAD
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_readable_characters() {
        assert_eq!(escape_key("report-2024-05-01"), "report-2024-05-01");
        assert_eq!(escape_key("backup:db1@host"), "backup:db1@host");
        assert_eq!(escape_key("café"), "café");
    }

    #[test]
    fn unsafe_characters_are_percent_encoded() {
        assert_eq!(escape_key("a/b"), "a%2Fb");
        assert_eq!(escape_key("50%"), "50%25");
        assert_eq!(escape_key(".."), "%2E.");
        assert_eq!(escape_key("two words"), "two%20words");
        assert_eq!(escape_key("*"), "%2A");
    }

    #[test]
    fn escaping_is_reversible() {
        for key in [
            "a/b",
            "50%",
            "..",
            ".hidden",
            "x y\tz",
            "café/☃",
            "%2F",
            "plain",
        ] {
            let name = format!("{}.json", escape_key(key));
            assert_eq!(key_from_file_name(&name).as_deref(), Some(key), "{name}");
        }
    }

    #[test]
    fn long_keys_are_refused_before_they_reach_the_file_system() {
        assert!(check_key(&"k".repeat(200)).is_ok());
        assert!(check_key(&"/".repeat(100)).is_err());
    }
}
