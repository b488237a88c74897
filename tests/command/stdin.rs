//! Command mode: stdin.

use super::*;

#[test]
fn regular_file_is_rewound_to_its_starting_offset() {
    let s = Scratch::new();
    let input = s.write("input", b"0123456789abcdef");
    let job = s.job("cat >> \"$D/seen\"; echo >> \"$D/seen\"; echo run >> \"$D/count\"; [ $(wc -l < \"$D/count\") -ge 3 ]");
    let mut file = std::fs::File::open(&input).unwrap();
    file.seek(SeekFrom::Start(10)).unwrap();
    let r = retry().args(fast(&[&job])).stdin(file).run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(s.read("seen"), "abcdef\nabcdef\nabcdef\n");
}

#[test]
fn pipe_over_ten_mib_is_replayed_to_every_attempt() {
    let s = Scratch::new();
    let data: Vec<u8> = (0..12 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let job =
        s.job("cksum >> \"$D/sums\"; echo run >> \"$D/count\"; [ $(wc -l < \"$D/count\") -ge 3 ]");
    let mut child = retry()
        .args(fast(&[&job]))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&data);
        data
    });
    let output = child.wait_with_output().unwrap();
    let data = writer.join().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = {
        let mut c = std::process::Command::new("cksum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(&data).unwrap();
        String::from_utf8(c.wait_with_output().unwrap().stdout).unwrap()
    };
    let sums = s.read("sums");
    assert_eq!(sums.lines().count(), 3);
    for line in sums.lines() {
        assert_eq!(
            format!("{line}\n"),
            expected,
            "every attempt saw the same bytes"
        );
    }
}

#[test]
fn partial_reads_are_continued_on_replay() {
    let s = Scratch::new();
    // The first attempt reads one line and fails; the second must see all three.
    let job = s.job("echo run >> \"$D/count\"\nif [ $(wc -l < \"$D/count\") -eq 1 ]; then head -n 1 > /dev/null; exit 1; fi\ncat > \"$D/seen\"");
    let mut child = retry().args(fast(&[&job])).stdin(Stdio::piped()).spawn();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"one\ntwo\nthree\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(s.read("seen"), "one\ntwo\nthree\n");
}

#[test]
fn endless_input_does_not_hang() {
    let s = Scratch::new();
    let r = support::Invocation::of("sh")
        .arg("-c")
        .arg(format!("yes | {} --delay 1ms -- head -n 1", support::bin()))
        .env_remove("RETRY_DEPTH")
        .run();
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(r.stdout_text(), "y\n");
    drop(s);
}

#[test]
fn stdin_null_and_inherit_overrides() {
    let s = Scratch::new();
    let job = s.job("cat > \"$D/seen\"");
    let mut child = retry()
        .args(["--stdin", "null", &job])
        .stdin(Stdio::piped())
        .spawn();
    // retry may be gone before the write: it never reads this pipe.
    let _ = child.stdin.take().unwrap().write_all(b"hidden\n");
    assert!(child.wait().unwrap().success());
    assert_eq!(s.read("seen"), "");

    let job = s.script(
        "job2",
        "echo run >> \"$D/count2\"; cat >> \"$D/seen2\"; [ $(wc -l < \"$D/count2\") -ge 2 ]",
    );
    let mut child = retry()
        .args(fast(&["--stdin", "inherit", &job]))
        .stdin(Stdio::piped())
        .spawn();
    child.stdin.take().unwrap().write_all(b"once\n").unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(s.read("seen2"), "once\n", "inherited stdin is not replayed");
}
