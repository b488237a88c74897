//! Where a connection's user and password come from when the URL does not say,
//! as libpq finds them: the login name, and `$PGPASSFILE` or `~/.pgpass`.

use std::path::PathBuf;

/// The user's login name, libpq's default user (`sys::login_name`: on Unix the name
/// /etc/passwd gives this uid, so users that only LDAP or sssd know have none here and
/// need PGUSER or a user in the URL).
pub(super) fn login_name() -> Option<String> {
    crate::sys::login_name()
}

/// The password for this connection from `$PGPASSFILE` or `~/.pgpass`, as libpq reads
/// it: `host:port:db:user:password` lines, `*` matching anything, `\` escaping.
pub(super) fn pgpass_password(host: &str, port: u16, dbname: &str, user: &str) -> Option<String> {
    let path = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(crate::sys::pgpass_file)?;
    let meta = std::fs::metadata(&path).ok()?;
    if crate::sys::open_to_others(&meta) {
        crate::report::notice(&format!(
            "ignoring {}: it is readable by group or others; chmod 0600 it",
            path.display()
        ));
        return None;
    }
    let text = std::fs::read_to_string(&path).ok()?;
    let wanted = [
        host.to_string(),
        port.to_string(),
        dbname.into(),
        user.into(),
    ];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(pgpass_fields)
        .find(|fields| {
            fields.len() == 5
                && fields
                    .iter()
                    .zip(&wanted)
                    .all(|(field, want)| field == "*" || field == want)
        })
        .and_then(|mut fields| fields.pop())
}

fn pgpass_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut().expect("never empty").extend(chars.next()),
            ':' => fields.push(String::new()),
            c => fields.last_mut().expect("never empty").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_lines_are_split_with_escapes() {
        assert_eq!(
            pgpass_fields(r"db\:1:*:jobs:app:pa\\ss:x"),
            ["db:1", "*", "jobs", "app", r"pa\ss", "x"]
        );
    }
}
