# fish completion for retry, written from the clap definition in src/cli/ (do not
# edit: regenerate as the README says). Before the target: retry's options and their
# values. From the target on (the first operand, or the word after --): a command name,
# then that command's own completion (complete -C). After a URL, retry's options again
# (curl's habit), and nothing for a second operand.

# Prints where the target starts among the line's tokens (1 is retry), or fails while
# the current token is still one of retry's options or an option's value. Options may
# follow a URL, as curl takes them: the scan goes on past it, and a second operand (or
# -- after it) makes the URL the target again, for which nothing is offered.
function __retry_target_start
    set -l tokens (commandline -opc)
    set -l i 2
    set -l url
    while test $i -le (count $tokens)
        switch $tokens[$i]
            case --
                if set -q url[1]
                    echo $url
                else
                    echo (math $i + 1)
                end
                return 0
            case '--*=*'
            case '--attempts' '--delay' '--max-delay' '--backoff' '--factor' '--jitter' '--delays' '--consecutive' '--timeout' '--max-time' '--seed' '--profile' '--stop-on' '--retry-on' '--success-on' '--stop-on-output' '--retry-on-output' '--success-on-output' '--stdin' '--kill-after' '--signal' '--request' '--header' '--data' '--json' '--output' '--connect-timeout' '--max-redirs' '--idempotency-key' '--idempotency-header' '--retry-on-status' '--stop-on-status' '--max-retry-after' '--write-out' '--dump-header' '--retry' '--retry-delay' '--retry-max-time' '--continue-at' '--user' '--proto' '--proto-redir' '--user-agent' '--referer' '--cookie' '--data-binary' '--data-raw' '--data-urlencode' '--upload-file' '--form' '--proxy' '--noproxy' '--cacert' '--cert' '--key' '--resolve' '--unix-socket' '--lock' '--lock-wait' '--busy-exit' '--once' '--state' '--lease-ttl' '--on-retry' '--on-give-up' '--on-success' '--hook-timeout' '--schedule' '--crontab' '--job-output' '--job' '--catch-up' '--catch-up-window' '--overlap' '--grace' '--tz' '--metrics-listen' '--retry-budget' '--budget-size' '--budget-ratio' '--circuit' '--circuit-failures' '--circuit-cooldown' '--circuit-exit' '--throttled' '--splay' '--log-format' '--report' '--otel'
                set i (math $i + 1)
            case '--*'
            case -
                echo $i
                return 0
            case '-*'
                if __retry_short_waits $tokens[$i]
                    set i (math $i + 1)
                end
            case '*'
                if not set -q url[1]; and string match -qir '^https?://' -- $tokens[$i]
                    set url $i
                else if set -q url[1]
                    echo $url
                    return 0
                else
                    echo $i
                    return 0
                end
        end
        set i (math $i + 1)
    end
    # The loop stopped on the current token, not on the value of an option before it.
    set -l current (commandline -ct)
    if test $i -eq (math (count $tokens) + 1); and not string match -q -- '-*' $current
        if not set -q url[1]
            echo $i
            return 0
        else if test -n "$current"
            echo $url
            return 0
        end
    end
    return 1
end

# Whether a cluster of short options (-qj) ends with one that takes the next token.
function __retry_short_waits
    set -l chars (string split '' -- (string sub -s 2 -- $argv[1]))
    for j in (seq (count $chars))
        if string match -qr -- '^[ajtmXHdowDCuAebTFxE]$' $chars[$j]
            test $j -eq (count $chars)
            return
        end
    end
    return 1
end

# The target's completions: command names first, then the command's own completion.
function __retry_complete_target
    set -l start (__retry_target_start); or return
    set -l tokens (commandline -opc)
    set -l target
    if test $start -le (count $tokens)
        set target $tokens[$start..-1]
    end
    # A URL is the whole target: no file names for it.
    if set -q target[1]; and string match -qr '^https?://' -- $target[1]
        return
    end
    if not set -q target[1]; and string match -qr '^https?://' -- (commandline -ct)
        return
    end
    set -l line (string escape -- $target) (commandline -ct)
    complete -C (string join ' ' -- $line)
end

complete -c retry -f
complete -c retry -n '__retry_target_start >/dev/null' -a '(__retry_complete_target)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'a' -l 'attempts' -x -d 'Total attempts, the first included (1 = never retry; 0 = no limit, with --max-time)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'delay' -x -d 'Base delay before the first retry'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'max-delay' -x -d 'Cap on any one backoff sleep, applied before jitter [default: 30s, or --delay when longer]'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'backoff' -x -a 'exponential\\t\'delay * factor^(n-1), capped by --max-delay\' linear\\t\'delay * n, capped by --max-delay\' constant\\t\'delay every time\' fibonacci\\t\'delay * F(n), the Fibonacci numbers 1, 1, 2, 3, 5, 8 ..., capped by --max-delay\'' -d 'How the delay grows from one retry to the next'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'factor' -x -d 'Exponential growth factor, above 1 (at most 1000)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'j' -l 'jitter' -x -a 'full\\t\'A uniform draw from 0 to d: spreads a crowd of clients the most\' equal\\t\'d/2 plus a uniform draw from 0 to d/2\' decorrelated\\t\'min(--max-delay, a uniform draw from --delay to 3 * the previous sleep)\' none\\t\'Exactly d: clients that failed together come back together\'' -d 'How each sleep d is randomised, so clients that failed together return apart'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'delays' -x -d 'The sleeps before retry 1, 2, 3 ..., the last one repeating, e.g. 1s,5s,30s'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'consecutive' -x -d 'Succeed only after N successful attempts in a row, e.g. --consecutive 3'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'until-failure' -d 'Attempt again after every success, until an attempt fails (hunting a flaky test)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'ignore-retry-after' -d 'Let the backoff alone decide: ignore Retry-After, RateLimit-Reset and RETRY_CONTROL waits'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 't' -s 'm' -l 'timeout' -x -d 'Limit on one attempt; an attempt that runs out is a transient failure'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'max-time' -x -d 'Wall-clock time limit for the attempts and the waits before and between them'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'seed' -x -d 'Seed the jitter, for reproducible schedules'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'allow-nested' -d 'Retry even when running inside another retry (RETRY_DEPTH >= 1)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'profile' -x -a 'auto\\t\'Pick from the command\\\'s base name (curl, wget, ssh/scp/sftp, rsync, git), else generic\' generic\\t\'Exit codes only: 0 success; 126, 127 and most sysexits permanent; the rest transient\' curl\\t\'curl\\\'s exit codes, and for exit 22 the HTTP status it prints on stderr\' wget\\t\'wget\\\'s exit codes, and for exit 8 the HTTP status it prints on stderr\' ssh\\t\'ssh, scp, sftp: 255 (connection failure) is transient, other codes are the remote\\\'s\' rsync\\t\'rsync\\\'s network and partial-transfer codes are transient\' git\\t\'git: 128 is transient only when stderr shows a network failure\'' -d 'Exit-code vocabulary of a known tool; auto picks one from the command\'s name'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'stop-on' -x -d 'Exit codes that are permanent failures, e.g. 2,64-78'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'retry-on' -x -d 'Exit codes that are retried; every other non-zero exit becomes permanent, e.g. 75'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'success-on' -x -d 'Exit codes that count as success, e.g. 0,1 for grep'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'stop-on-output' -x -d 'An output line matching REGEX makes the attempt a permanent failure (repeatable)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'retry-on-output' -x -d 'An output line matching REGEX makes the attempt transient, even on exit 0 (repeatable)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'success-on-output' -x -d 'An output line matching REGEX makes the attempt a success, whatever its exit (repeatable)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'stdin' -x -a 'auto\\t\'Regular file: rewind; pipe or socket: record and replay; terminal: inherit\' replay\\t\'Record what the first attempt reads and replay it to later attempts\' inherit\\t\'Pass retry\\\'s stdin through untouched\' null\\t\'Give every attempt /dev/null\'' -d 'Where the command\'s stdin comes from on each attempt'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'hold-stdout' -d 'Spool each attempt\'s stdout and write only the final attempt\'s'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'no-hold-stdout' -d 'Stream a wrapped curl\'s or wget\'s stdout live: do not hold it'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'hold-stderr' -d 'Spool each attempt\'s stderr and write only the final attempt\'s, as --hold-stdout'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'kill-after' -x -d 'After --timeout\'s SIGTERM, wait this long before SIGKILL'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'signal' -x -d 'The signal --timeout sends first, e.g. --signal INT (GNU timeout\'s -s)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'preserve-status' -d 'A timed-out attempt exits with its own status (128+N for signal N), not 124'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'X' -l 'request' -x -a 'GET\\t\'idempotent\' HEAD\\t\'idempotent\' POST\\t\'not idempotent: retried only when it never reached the server\' PUT\\t\'idempotent\' DELETE\\t\'idempotent\' PATCH\\t\'not idempotent: retried only when it never reached the server\' OPTIONS\\t\'idempotent\' TRACE\\t\'idempotent\'' -d 'HTTP method; default GET, or POST when a body is given (PUT with -T)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'H' -l 'header' -x -d 'Request header \'Name: value\' (repeatable); @FILE reads header lines from FILE'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'd' -l 'data' -x -d 'Request body: DATA, @FILE or @- for stdin; read once, sent identically every attempt'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'json' -x -d 'JSON request body (DATA, @FILE or @-), with Content-Type and Accept set to JSON'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'o' -l 'output' -r -F -d 'Write the successful body to FILE atomically; FILE is untouched if the run fails'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'i' -l 'include' -d 'Print the response status line and headers before the body'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'connect-timeout' -x -d 'Limit on connecting'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'k' -l 'insecure' -d 'Skip TLS certificate verification'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'max-redirs' -x -d 'Redirects followed (0 = none)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'idempotency-key' -x -d 'Send an idempotency key with every attempt: auto makes one UUID v4 for the run'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'idempotency-header' -x -d 'Header name for the idempotency key'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'retry-unsafe' -d 'Allow retrying non-idempotent methods (POST, PATCH, ...) without a key'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'retry-on-status' -x -d 'HTTP statuses that are retried (overrides the built-in classes)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'stop-on-status' -x -d 'HTTP statuses that stop at once (overrides the built-in classes)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'max-retry-after' -x -d 'Longest Retry-After to obey; a longer one ends the run at once'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'f' -l 'fail' -d 'Accepted: a status >= 400 always fails here (exit 22)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'fail-with-body' -d 'On giving up with a status >= 400, output that response\'s body'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 's' -l 'silent' -d 'Nothing on stderr (-qq); with -S, the final error line only (-q)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'S' -l 'show-error' -d 'With -s, still print the final error line'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'L' -l 'location' -d 'Accepted: redirects are always followed (--max-redirs 0 turns that off)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'I' -l 'head' -d 'Send HEAD; the response headers are the output'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'w' -l 'write-out' -x -d 'After the final attempt, print FORMAT (curl\'s %{variables}; @FILE reads it)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'D' -l 'dump-header' -r -F -d 'Write the final response headers to FILE (- for stdout)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'O' -l 'remote-name' -d '-o with the URL\'s last path segment as FILE'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'retry' -x -d 'curl\'s: N retries, the same as -a N+1'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'retry-delay' -x -d 'curl\'s: sleep exactly SECONDS before each retry (--delay S --backoff constant -j none)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'retry-max-time' -x -d 'curl\'s: no retry starts once SECONDS have passed since the first attempt started'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'retry-connrefused' -d 'Accepted: a refused connection is always retried'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'retry-all-errors' -d 'Every failure is transient, 4xx included, if the request is safe to repeat'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'C' -l 'continue-at' -x -d 'With -o, resume a body cut off mid-way (only -C -)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'u' -l 'user' -x -d 'Basic authentication; the password is shown as *** everywhere'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'basic' -d 'Accepted: -u sends Basic authentication, as curl does by default'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'proto' -x -d 'Protocols the URL may use, in curl\'s syntax: =https, -all,+https or http,https'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'proto-redir' -x -d 'Protocols a redirect may go to, in --proto\'s syntax (--proto applies as well)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'A' -l 'user-agent' -x -d 'User-Agent header ("" sends none)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'e' -l 'referer' -x -d 'Referer header'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'b' -l 'cookie' -x -d 'Cookie header \'NAME=VALUE; NAME2=VALUE2\' (repeatable; curl\'s cookie file is refused)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'data-binary' -x -d 'Request body: DATA, @FILE or @- sent byte for byte (newlines kept)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'data-raw' -x -d 'Request body: DATA as given; a leading @ is not a file'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'data-urlencode' -x -d 'URL-encoded body part: CONTENT, =CONTENT, NAME=CONTENT, @FILE or NAME@FILE'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'T' -l 'upload-file' -r -F -d 'Upload FILE as the body of a PUT (- reads stdin), as it is'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'g' -l 'globoff' -d 'Send [ ] { } in the URL as they are: no globbing'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'G' -l 'get' -d 'Send the -d-style data in the URL\'s query string, with GET'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'F' -l 'form' -x -d 'Multipart form field: NAME=VALUE, NAME=@FILE (upload) or NAME=<FILE (repeatable)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'compressed' -d 'Ask for gzip, deflate, br or zstd and decode the body (otherwise never decoded)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'x' -l 'proxy' -x -d 'Use this proxy instead of the environment\'s: http://, https://, socks5[h]://, socks4[a]://'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'noproxy' -x -d 'Hosts reached without a proxy: comma-separated names, domains, addresses or *'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'cacert' -r -F -d 'Trust only the CA certificates (PEM) in FILE'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'E' -l 'cert' -r -F -d 'Client certificate (PEM); FILE may hold the private key too'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'key' -r -F -d 'Private key (PEM) for --cert'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'http1.1' -d 'Use HTTP/1.1 only'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'http2' -d 'Use HTTP/2: over https:// offered first by ALPN (HTTP/1.1 if the server declines, as with curl); over http:// prior knowledge (h2c), without curl\'s Upgrade request'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'resolve' -x -d 'Connect to ADDR for HOST:PORT instead of resolving HOST (repeatable)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s '4' -l 'ipv4' -d 'Resolve names to IPv4 addresses only'
complete -c retry -n 'not __retry_target_start >/dev/null' -s '6' -l 'ipv6' -d 'Resolve names to IPv6 addresses only'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'unix-socket' -r -F -d 'Talk HTTP over the Unix socket PATH (the URL\'s host is only the Host header)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'lock' -r -F -d 'Run only while holding a lock: a file PATH (flock) or postgres://...#NAME'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'lock-wait' -x -d 'Wait this long for a busy lock before skipping (0 = skip at once)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'busy-exit' -x -d 'Exit status when skipped because the lock is busy'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'once' -x -d 'Skip if KEY already succeeded; record KEY after success'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'state' -x -a '(__fish_complete_directories)' -d 'Where markers, schedule records, budgets, circuits and fencing counters live: a directory or postgres://... [default: $XDG_STATE_HOME/retry or ~/.local/state/retry]'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'lease-ttl' -x -d 'Lifetime of a PostgreSQL lease, 3s to 1h [default: 15s]'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'on-retry' -x -d 'Run CMD with sh -c after a failed attempt that will be retried, during the sleep'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'on-give-up' -x -d 'Run CMD with sh -c after the last attempt failed, with the report JSON on stdin'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'on-success' -x -d 'Run CMD with sh -c after an attempt succeeded, with the report JSON on stdin'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'hook-timeout' -x -d 'Limit on each hook: its processes get SIGTERM, then SIGKILL a second later'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'schedule' -x -d 'Run in the foreground, one run at each time CRON names'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'crontab' -r -F -d 'Run every job of a crontab file in this one process'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'job-output' -x -a 'labelled\\t\'`TIMESTAMP [JOB@SLOT] line` (JSON under --log-format json), each line whole\' raw\\t\'Unchanged\'' -d 'How the jobs\' output is written: each line labelled with its job and slot, or raw [default: labelled under --crontab, raw under --schedule]'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'job' -x -d 'The job\'s name in slot keys, locks and logs [default: the command\'s base name (or the URL\'s host) and 8 hex digits of its SHA-256]'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'catch-up' -x -a 'none\\t\'Run none; say how many were dropped\' latest\\t\'Run the most recent missed slot of the window\' all\\t\'Run every missed slot of the window, oldest first\'' -d 'What to do with missed slots (no record in --state)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'catch-up-window' -x -d 'How far back missed slots are looked for'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'overlap' -x -a 'skip\\t\'Do not run it; record and log it as skipped\' queue\\t\'Run it after the running one ends\' allow\\t\'Run it beside the running one (supercronic\\\'s -overlapping)\' replace\\t\'Stop the running one, then run it once that has let go (Kubernetes\\\' Replace)\'' -d 'A slot that comes while the job\'s previous slot still runs (on any scheduler sharing --state)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'grace' -x -d 'How long a running slot may go on after SIGINT or SIGTERM stops the scheduler'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'tz' -x -d 'The zone CRON is read in (IANA name, from TZDIR or /usr/share/zoneinfo; a zone named in a calendar expression wins) [default: TZ, else local]'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'metrics-listen' -x -d 'Serve the scheduler\'s Prometheus metrics over HTTP at http://ADDR:PORT/metrics'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'retry-budget' -x -d 'Share a retry budget called NAME: retries stop while half its tokens are spent'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'budget-size' -x -d 'Tokens the retry budget holds (it starts full)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'budget-ratio' -x -d 'Tokens a successful attempt earns, 0 < R <= 1'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'circuit' -x -d 'Share a circuit breaker called NAME: after failed runs in a row, runs are refused'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'circuit-failures' -x -d 'Failed runs in a row that open the circuit'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'circuit-cooldown' -x -d 'How long the circuit stays open'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'circuit-exit' -x -d 'Exit status of a run refused by an open circuit'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'throttled' -x -a 'exit\\t\'End the run: a refused retry exits with the last attempt\\\'s status, an open circuit with --circuit-exit\' wait\\t\'Hold the run, sending nothing, and ask again later (needs --max-time, which bounds it)\'' -d 'What a spent retry budget or an open circuit does to the run: hold it, or end it'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'splay' -x -d 'Sleep a random time up to DUR before the first attempt (repeatable with --seed)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'q' -l 'quiet' -d 'Less on stderr: no per-attempt lines (-qq: nothing but retry\'s own errors)'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'v' -l 'verbose' -d 'More on stderr (repeatable)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'log-format' -x -a 'text\\t\'Lines starting with "retry: "\' json\\t\'JSON Lines, one event per line\'' -d 'Format of stderr event lines'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'report' -r -F -d 'Write a JSON record of every attempt and the result to FILE (- for stderr)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'otel' -x -d 'Send the run\'s trace to the OpenTelemetry collector at URL (OTLP/HTTP)'
complete -c retry -n 'not __retry_target_start >/dev/null' -l 'dry-run' -d 'Print the schedule and classification rules, run nothing, exit 0'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'h' -l 'help' -d 'Print help (see more with \'--help\')'
complete -c retry -n 'not __retry_target_start >/dev/null' -s 'V' -l 'version' -d 'Print version'
