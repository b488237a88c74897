//! The output rules (`--stop-on-output`, `--retry-on-output`, `--success-on-output`)
//! applied to a response body: its lines, split as a command's output is, checked by
//! command mode's own `OutputWatch` and judged by the same `output_verdict`.

use crate::classify::command::{OutputFacts, OutputWatch, Stream, output_verdict};
use crate::domain::Verdict;
use crate::streams::pump::Lines;

/// How much of a body (after decoding) the rules read.
pub const SCANNED: usize = 1 << 20;

/// One body's lines as they arrive, and what the rules saw in them.
pub struct BodyScan<'w> {
    watch: &'w OutputWatch,
    lines: Lines,
    facts: OutputFacts,
    scanned: usize,
    /// The body's first bytes, for the excerpt of a failed response.
    pub start: Vec<u8>,
    start_limit: usize,
}

impl<'w> BodyScan<'w> {
    pub fn new(watch: &'w OutputWatch, start_limit: usize) -> BodyScan<'w> {
        BodyScan {
            watch,
            lines: Lines::default(),
            facts: OutputFacts::default(),
            scanned: 0,
            start: Vec::new(),
            start_limit,
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        let keep = self
            .start_limit
            .saturating_sub(self.start.len())
            .min(chunk.len());
        self.start.extend_from_slice(&chunk[..keep]);
        let part = &chunk[..chunk.len().min(SCANNED - self.scanned)];
        self.scanned += part.len();
        let BodyScan {
            watch,
            lines,
            facts,
            ..
        } = self;
        lines.feed(part, |line| watch.observe(line, Stream::Stdout, facts));
    }

    /// The rules' verdict on the whole body, or `None` when no pattern matched.
    pub fn verdict(mut self) -> Option<Verdict> {
        let BodyScan {
            watch,
            lines,
            facts,
            ..
        } = &mut self;
        lines.finish(|line| watch.observe(line, Stream::Stdout, facts));
        output_verdict(&self.facts, " in the body")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::command::OutputRules;
    use crate::classify::profiles::GENERIC;
    use crate::domain::Class;

    fn watch(retry: &str) -> OutputWatch {
        let rules = OutputRules {
            retry: vec![regex::bytes::Regex::new(retry).unwrap()],
            ..OutputRules::default()
        };
        OutputWatch::new(rules, &GENERIC).unwrap()
    }

    #[test]
    fn lines_across_chunks_are_matched_within_the_first_mebibyte() {
        let w = watch("^busy$");
        let mut scan = BodyScan::new(&w, 8);
        scan.feed(b"ok\nbu");
        scan.feed(b"sy");
        let verdict = scan.verdict().expect("matched");
        assert_eq!(verdict.class, Class::Transient);
        assert!(
            verdict
                .reason
                .starts_with("--retry-on-output matched 'busy' in the body")
        );
        let mut late = BodyScan::new(&w, 8);
        late.feed(&vec![b'x'; SCANNED]);
        late.feed(b"\nbusy\n");
        assert!(late.verdict().is_none(), "past the first MiB");
    }
}
