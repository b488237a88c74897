//! The output of the jobs' commands, as a crontab's scheduler writes it: every line
//! whole, on the stream it came from, labelled `TIMESTAMP [JOB@SLOT] line` (or one JSON
//! object with time, job, slot, stream and line), never interleaved with another job's.
//! Lines are cut from the bytes each pipe delivers ([`Lines`]) and written by a thread
//! of their own ([`Writer`]), so a reader of the scheduler's stdout that stalls holds
//! back the jobs' output (their pipes fill, as they would without a scheduler), never
//! the scheduler's clock.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::time::SystemTime;

use serde_json::json;

use crate::domain::rfc3339_millis;
use crate::report;

/// The longest line kept whole: a longer one is written in pieces of this size.
const MAX_LINE: usize = 64 << 10;
/// Lines handed to the writer and not yet written, at most.
const QUEUED: usize = 4096;

/// Which of the scheduler's streams a line goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// How a slot's lines are labelled.
#[derive(Clone, Debug)]
pub struct Label {
    pub job: String,
    /// `JOB@SLOT`.
    pub key: String,
    /// SLOT, RFC 3339 UTC.
    pub slot: String,
    pub json: bool,
}

impl Label {
    /// `TIMESTAMP [JOB@SLOT] line`, or one JSON object with time, job, slot, stream, line.
    pub fn line(&self, text: &[u8], stream: Stream) -> Vec<u8> {
        let text = String::from_utf8_lossy(text);
        let line = if self.json {
            let value = json!({
                "job": self.job,
                "slot": self.slot,
                "stream": stream.name(),
                "line": text,
            });
            format!("{}\n", report::with_time(&value))
        } else {
            format!(
                "{} [{}] {text}\n",
                rfc3339_millis(SystemTime::now()),
                self.key
            )
        };
        line.into_bytes()
    }
}

/// The whole lines of one pipe's bytes, as they arrive.
#[derive(Default)]
pub struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    /// Takes `bytes`; returns the lines they complete (without their newline).
    pub fn take(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.partial.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.partial.drain(..=end).collect();
            line.pop();
            out.push(line);
        }
        while self.partial.len() >= MAX_LINE {
            out.push(self.partial.drain(..MAX_LINE).collect());
        }
        out
    }

    /// The pipe ended: what is left is a last line without its newline.
    pub fn end(&mut self) -> Option<Vec<u8>> {
        (!self.partial.is_empty()).then(|| std::mem::take(&mut self.partial))
    }
}

/// The thread that writes labelled lines to the scheduler's stdout and stderr.
pub struct Writer {
    to: Option<SyncSender<(Stream, Vec<u8>)>>,
    /// Lines the thread could not take yet, in order.
    held: VecDeque<(Stream, Vec<u8>)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    pub fn start() -> std::io::Result<Writer> {
        let (to, from) = std::sync::mpsc::sync_channel(QUEUED);
        let thread = std::thread::Builder::new()
            .name("job-output".into())
            .spawn(move || write_all(&from))?;
        Ok(Writer {
            to: Some(to),
            held: VecDeque::new(),
            thread: Some(thread),
        })
    }

    /// Hands `line` over to be written after every line handed over before it.
    pub fn write(&mut self, stream: Stream, line: Vec<u8>) {
        self.held.push_back((stream, line));
        self.flush();
    }

    /// Hands over what the thread can take now; whether nothing is left held back
    /// (while something is, the scheduler reads no more of the jobs' output).
    pub fn flush(&mut self) -> bool {
        let Some(to) = &self.to else {
            self.held.clear();
            return true;
        };
        while let Some(line) = self.held.pop_front() {
            match to.try_send(line) {
                Ok(()) => {}
                Err(TrySendError::Full(line)) => {
                    self.held.push_front(line);
                    return false;
                }
                // The thread is gone (its streams failed): nobody is left to tell.
                Err(TrySendError::Disconnected(_)) => self.held.clear(),
            }
        }
        true
    }
}

impl Drop for Writer {
    /// Writes what is left, then ends the thread.
    fn drop(&mut self) {
        if let Some(to) = self.to.take() {
            for line in self.held.drain(..) {
                if to.send(line).is_err() {
                    break;
                }
            }
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn write_all(from: &Receiver<(Stream, Vec<u8>)>) {
    for (stream, line) in from {
        // Nobody is left to tell when the scheduler's own stream fails.
        let _ = match stream {
            Stream::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(&line).and_then(|()| out.flush())
            }
            Stream::Stderr => std::io::stderr().lock().write_all(&line),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_whole_whatever_the_chunks_and_a_last_one_is_kept() {
        let mut lines = Lines::default();
        assert!(lines.take(b"par").is_empty());
        assert_eq!(
            lines.take(b"tial\nnext\nla"),
            [b"partial".to_vec(), b"next".to_vec()]
        );
        assert_eq!(lines.end(), Some(b"la".to_vec()));
        assert_eq!(lines.end(), None);
        let long = vec![b'x'; MAX_LINE + 10];
        let cut = lines.take(&long);
        assert_eq!(cut.len(), 1, "a line past the limit is written in pieces");
        assert_eq!(lines.end().map(|l| l.len()), Some(10));
    }

    #[test]
    fn labels_name_the_slot_and_json_lines_carry_the_stream() {
        let label = Label {
            job: "sync".into(),
            key: "sync@2026-01-01T00:00:00Z".into(),
            slot: "2026-01-01T00:00:00Z".into(),
            json: false,
        };
        let text = String::from_utf8(label.line(b"hello", Stream::Stdout)).unwrap();
        assert!(
            text.ends_with(" [sync@2026-01-01T00:00:00Z] hello\n"),
            "{text}"
        );
        let json = Label {
            json: true,
            ..label
        };
        let text = String::from_utf8(json.line(b"oops", Stream::Stderr)).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["stream"], "stderr");
        assert_eq!(value["job"], "sync");
        assert_eq!(value["line"], "oops");
    }
}
