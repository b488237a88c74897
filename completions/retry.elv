
use builtin;
use str;

set edit:completion:arg-completer[retry] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'retry'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'retry'= {
            cand -a 'Total attempts, the first included (1 = never retry)'
            cand --attempts 'Total attempts, the first included (1 = never retry)'
            cand --delay 'Base delay before the first retry'
            cand --max-delay 'Cap on any one backoff sleep, applied before jitter'
            cand --backoff 'How the delay grows from one retry to the next'
            cand --factor 'Exponential growth factor, above 1 (at most 1000)'
            cand -j 'How each sleep d is randomised, so clients that failed together return apart'
            cand --jitter 'How each sleep d is randomised, so clients that failed together return apart'
            cand -t 'Limit on one attempt; an attempt that runs out is a transient failure'
            cand --timeout 'Limit on one attempt; an attempt that runs out is a transient failure'
            cand --max-time 'Wall-clock budget for the whole run'
            cand --seed 'Seed the jitter, for reproducible schedules'
            cand --profile 'Exit-code vocabulary of a known tool; auto picks one from the command''s name'
            cand --stop-on 'Exit codes that are permanent failures, e.g. 2,64-78'
            cand --retry-on 'Exit codes that are retried; every other non-zero exit becomes permanent, e.g. 75'
            cand --success-on 'Exit codes that count as success, e.g. 0,1 for grep'
            cand --stop-on-output 'An output line matching REGEX makes the attempt a permanent failure (repeatable)'
            cand --retry-on-output 'An output line matching REGEX makes the attempt transient, even on exit 0 (repeatable)'
            cand --stdin 'Where the command''s stdin comes from on each attempt'
            cand --kill-after 'After --timeout''s SIGTERM, wait this long before SIGKILL'
            cand -X 'HTTP method; default GET, or POST when a body is given'
            cand --request 'HTTP method; default GET, or POST when a body is given'
            cand -H 'Request header ''Name: value'' (repeatable); @FILE reads header lines from FILE'
            cand --header 'Request header ''Name: value'' (repeatable); @FILE reads header lines from FILE'
            cand -d 'Request body: DATA, @FILE or @- for stdin; read once, sent identically every attempt'
            cand --data 'Request body: DATA, @FILE or @- for stdin; read once, sent identically every attempt'
            cand --json 'JSON request body (DATA, @FILE or @-), with Content-Type and Accept set to JSON'
            cand -o 'Write the successful body to FILE atomically; FILE is untouched if the run fails'
            cand --output 'Write the successful body to FILE atomically; FILE is untouched if the run fails'
            cand --connect-timeout 'Limit on connecting'
            cand --max-redirs 'Redirects followed (0 = none)'
            cand --idempotency-key 'Send an idempotency key with every attempt: auto makes one UUID v4 for the run'
            cand --idempotency-header 'Header name for the idempotency key'
            cand --retry-on-status 'HTTP statuses that are retried (overrides the built-in classes)'
            cand --stop-on-status 'HTTP statuses that stop at once (overrides the built-in classes)'
            cand --max-retry-after 'Longest Retry-After to obey; a longer one ends the run at once'
            cand -w 'After the final attempt, print FORMAT (curl''s %{variables}; @FILE reads it)'
            cand --write-out 'After the final attempt, print FORMAT (curl''s %{variables}; @FILE reads it)'
            cand -D 'Write the final response headers to FILE (- for stdout)'
            cand --dump-header 'Write the final response headers to FILE (- for stdout)'
            cand --retry 'curl''s: N retries, the same as -a N+1'
            cand --retry-delay 'curl''s: the same as --delay SECONDS --backoff constant'
            cand --retry-max-time 'curl''s: the same as --max-time SECONDS'
            cand -C 'With -o, resume a body cut off mid-way (only -C -)'
            cand --continue-at 'With -o, resume a body cut off mid-way (only -C -)'
            cand --lock 'Run only while holding a lock: a file PATH (flock) or postgres://...#NAME'
            cand --lock-wait 'Wait this long for a busy lock before skipping (0 = skip at once)'
            cand --busy-exit 'Exit status when skipped because the lock is busy'
            cand --once 'Skip if KEY already succeeded; record KEY after success'
            cand --state 'Where --once markers live: a directory or postgres://... [default: $XDG_STATE_HOME/retry or ~/.local/state/retry]'
            cand --log-format 'Format of stderr event lines'
            cand --report 'Write a JSON record of every attempt and the result to FILE'
            cand --allow-nested 'Retry even when running inside another retry (RETRY_DEPTH >= 1)'
            cand --hold-stdout 'Spool each attempt''s stdout and write only the final attempt''s'
            cand -i 'Print the response status line and headers before the body'
            cand --include 'Print the response status line and headers before the body'
            cand -k 'Skip TLS certificate verification'
            cand --insecure 'Skip TLS certificate verification'
            cand --retry-unsafe 'Allow retrying non-idempotent methods (POST, PATCH, ...) without a key'
            cand -f 'Accepted: a status >= 400 always fails here (exit 22)'
            cand --fail 'Accepted: a status >= 400 always fails here (exit 22)'
            cand --fail-with-body 'On giving up with a status >= 400, output that response''s body'
            cand -s 'Nothing on stderr (-qq); with -S, the final error line only (-q)'
            cand --silent 'Nothing on stderr (-qq); with -S, the final error line only (-q)'
            cand -S 'With -s, still print the final error line'
            cand --show-error 'With -s, still print the final error line'
            cand -L 'Accepted: redirects are always followed (--max-redirs 0 turns that off)'
            cand --location 'Accepted: redirects are always followed (--max-redirs 0 turns that off)'
            cand -I 'Send HEAD; the response headers are the output'
            cand --head 'Send HEAD; the response headers are the output'
            cand -O '-o with the URL''s last path segment as FILE'
            cand --remote-name '-o with the URL''s last path segment as FILE'
            cand --retry-connrefused 'Accepted: a refused connection is always retried'
            cand --retry-all-errors 'Every failure is transient, 4xx included, if the request is safe to repeat'
            cand -q 'Less on stderr: no per-attempt lines (-qq: nothing but retry''s own errors)'
            cand --quiet 'Less on stderr: no per-attempt lines (-qq: nothing but retry''s own errors)'
            cand -v 'More on stderr (repeatable)'
            cand --verbose 'More on stderr (repeatable)'
            cand --dry-run 'Print the schedule and classification rules, run nothing, exit 0'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}
