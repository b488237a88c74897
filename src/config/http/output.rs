//! Where a request's results go, checked before anything is sent: the body
//! (`-o FILE`, `-O`, or stdout), curl's output options (`-w`, `-D`,
//! `--fail-with-body`, `-C -`). Holding and delivering the body is [`exec::http`](crate::exec::http)'s work.

use std::fs;
use std::path::{Path, PathBuf};

use super::write_out::WriteOut;
use crate::cli::Cli;
use crate::files;

/// Where a successful body goes.
#[derive(Clone, Debug)]
pub enum Destination {
    Stdout,
    /// An existing device, FIFO or socket (`-o /dev/null`): written in place on
    /// success, never renamed over.
    Special(PathBuf),
    File {
        path: PathBuf,
        /// Mode for a new file: 0666 less the umask, as a shell redirection makes.
        mode: u32,
    },
}

impl Destination {
    /// Checks `-o FILE` up front: its directory must exist and it must not be
    /// a directory itself. `-o -` is stdout, as with curl.
    pub fn new(output: Option<&Path>) -> anyhow::Result<Self> {
        let Some(path) = output.filter(|path| *path != Path::new("-")) else {
            return Ok(Destination::Stdout);
        };
        files::check_file_target("-o/--output", path)?;
        if fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Ok(Destination::Special(path.to_path_buf()));
        }
        Ok(Destination::File {
            path: path.to_path_buf(),
            mode: 0o666 & !crate::sys::umask(),
        })
    }
}

/// curl's output options (-w, -D, --fail-with-body, -C -).
#[derive(Clone)]
pub struct OutputOptions {
    pub write_out: Option<WriteOut>,
    pub dump_header: Option<HeaderDump>,
    pub fail_with_body: bool,
    /// `-C -`: a body cut off is kept and the next attempt asks for the rest.
    pub resume: bool,
}

/// `-D`: where the final response's headers go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderDump {
    /// `-D -`.
    Stdout,
    File(PathBuf),
}

impl OutputOptions {
    pub fn from_cli(cli: &Cli) -> anyhow::Result<OutputOptions> {
        let write_out = cli
            .curl
            .write_out
            .as_deref()
            .map(WriteOut::new)
            .transpose()?;
        let dump_header = match cli.curl.dump_header.as_deref() {
            None => None,
            Some(path) if path.as_os_str() == "-" => Some(HeaderDump::Stdout),
            Some(path) => {
                files::check_file_target("-D/--dump-header", path)?;
                Some(HeaderDump::File(path.to_path_buf()))
            }
        };
        Ok(OutputOptions {
            write_out,
            dump_header,
            fail_with_body: cli.curl.fail_with_body,
            resume: cli.curl.continue_at.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_file_must_be_in_an_existing_directory() {
        assert!(Destination::new(Some(Path::new("/no/such/dir/f"))).is_err());
        assert!(Destination::new(Some(Path::new("/tmp"))).is_err());
        assert!(matches!(
            Destination::new(None).unwrap(),
            Destination::Stdout
        ));
        assert!(matches!(
            Destination::new(Some(Path::new("-"))).unwrap(),
            Destination::Stdout
        ));
    }
}
