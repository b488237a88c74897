
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'retry' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'retry'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'retry' {
            [CompletionResult]::new('-a', '-a', [CompletionResultType]::ParameterName, 'Total attempts, the first included (1 = never retry)')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'Total attempts, the first included (1 = never retry)')
            [CompletionResult]::new('--delay', '--delay', [CompletionResultType]::ParameterName, 'Base delay before the first retry')
            [CompletionResult]::new('--max-delay', '--max-delay', [CompletionResultType]::ParameterName, 'Cap on any one backoff sleep, applied before jitter')
            [CompletionResult]::new('--backoff', '--backoff', [CompletionResultType]::ParameterName, 'How the delay grows from one retry to the next')
            [CompletionResult]::new('--factor', '--factor', [CompletionResultType]::ParameterName, 'Exponential growth factor, above 1 (at most 1000)')
            [CompletionResult]::new('-j', '-j', [CompletionResultType]::ParameterName, 'How each sleep d is randomised, so clients that failed together return apart')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'How each sleep d is randomised, so clients that failed together return apart')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Limit on one attempt; an attempt that runs out is a transient failure')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Limit on one attempt; an attempt that runs out is a transient failure')
            [CompletionResult]::new('--max-time', '--max-time', [CompletionResultType]::ParameterName, 'Wall-clock budget for the whole run')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed the jitter, for reproducible schedules')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Exit-code vocabulary of a known tool; auto picks one from the command''s name')
            [CompletionResult]::new('--stop-on', '--stop-on', [CompletionResultType]::ParameterName, 'Exit codes that are permanent failures, e.g. 2,64-78')
            [CompletionResult]::new('--retry-on', '--retry-on', [CompletionResultType]::ParameterName, 'Exit codes that are retried; every other non-zero exit becomes permanent, e.g. 75')
            [CompletionResult]::new('--success-on', '--success-on', [CompletionResultType]::ParameterName, 'Exit codes that count as success, e.g. 0,1 for grep')
            [CompletionResult]::new('--stop-on-output', '--stop-on-output', [CompletionResultType]::ParameterName, 'An output line matching REGEX makes the attempt a permanent failure (repeatable)')
            [CompletionResult]::new('--retry-on-output', '--retry-on-output', [CompletionResultType]::ParameterName, 'An output line matching REGEX makes the attempt transient, even on exit 0 (repeatable)')
            [CompletionResult]::new('--stdin', '--stdin', [CompletionResultType]::ParameterName, 'Where the command''s stdin comes from on each attempt')
            [CompletionResult]::new('--kill-after', '--kill-after', [CompletionResultType]::ParameterName, 'After --timeout''s SIGTERM, wait this long before SIGKILL')
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'HTTP method; default GET, or POST when a body is given')
            [CompletionResult]::new('--request', '--request', [CompletionResultType]::ParameterName, 'HTTP method; default GET, or POST when a body is given')
            [CompletionResult]::new('-H', '-H ', [CompletionResultType]::ParameterName, 'Request header ''Name: value'' (repeatable); @FILE reads header lines from FILE')
            [CompletionResult]::new('--header', '--header', [CompletionResultType]::ParameterName, 'Request header ''Name: value'' (repeatable); @FILE reads header lines from FILE')
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'Request body: DATA, @FILE or @- for stdin; read once, sent identically every attempt')
            [CompletionResult]::new('--data', '--data', [CompletionResultType]::ParameterName, 'Request body: DATA, @FILE or @- for stdin; read once, sent identically every attempt')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'JSON request body (DATA, @FILE or @-), with Content-Type and Accept set to JSON')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the successful body to FILE atomically; FILE is untouched if the run fails')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the successful body to FILE atomically; FILE is untouched if the run fails')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Limit on connecting')
            [CompletionResult]::new('--max-redirs', '--max-redirs', [CompletionResultType]::ParameterName, 'Redirects followed (0 = none)')
            [CompletionResult]::new('--idempotency-key', '--idempotency-key', [CompletionResultType]::ParameterName, 'Send an idempotency key with every attempt: auto makes one UUID v4 for the run')
            [CompletionResult]::new('--idempotency-header', '--idempotency-header', [CompletionResultType]::ParameterName, 'Header name for the idempotency key')
            [CompletionResult]::new('--retry-on-status', '--retry-on-status', [CompletionResultType]::ParameterName, 'HTTP statuses that are retried (overrides the built-in classes)')
            [CompletionResult]::new('--stop-on-status', '--stop-on-status', [CompletionResultType]::ParameterName, 'HTTP statuses that stop at once (overrides the built-in classes)')
            [CompletionResult]::new('--max-retry-after', '--max-retry-after', [CompletionResultType]::ParameterName, 'Longest Retry-After to obey; a longer one ends the run at once')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'After the final attempt, print FORMAT (curl''s %{variables}; @FILE reads it)')
            [CompletionResult]::new('--write-out', '--write-out', [CompletionResultType]::ParameterName, 'After the final attempt, print FORMAT (curl''s %{variables}; @FILE reads it)')
            [CompletionResult]::new('-D', '-D ', [CompletionResultType]::ParameterName, 'Write the final response headers to FILE (- for stdout)')
            [CompletionResult]::new('--dump-header', '--dump-header', [CompletionResultType]::ParameterName, 'Write the final response headers to FILE (- for stdout)')
            [CompletionResult]::new('--retry', '--retry', [CompletionResultType]::ParameterName, 'curl''s: N retries, the same as -a N+1')
            [CompletionResult]::new('--retry-delay', '--retry-delay', [CompletionResultType]::ParameterName, 'curl''s: the same as --delay SECONDS --backoff constant')
            [CompletionResult]::new('--retry-max-time', '--retry-max-time', [CompletionResultType]::ParameterName, 'curl''s: the same as --max-time SECONDS')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'With -o, resume a body cut off mid-way (only -C -)')
            [CompletionResult]::new('--continue-at', '--continue-at', [CompletionResultType]::ParameterName, 'With -o, resume a body cut off mid-way (only -C -)')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Basic authentication; the password is shown as *** everywhere')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'Basic authentication; the password is shown as *** everywhere')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'User-Agent header ("" sends none)')
            [CompletionResult]::new('--user-agent', '--user-agent', [CompletionResultType]::ParameterName, 'User-Agent header ("" sends none)')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Referer header')
            [CompletionResult]::new('--referer', '--referer', [CompletionResultType]::ParameterName, 'Referer header')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Cookie header ''NAME=VALUE; NAME2=VALUE2'' (repeatable; curl''s cookie file is refused)')
            [CompletionResult]::new('--cookie', '--cookie', [CompletionResultType]::ParameterName, 'Cookie header ''NAME=VALUE; NAME2=VALUE2'' (repeatable; curl''s cookie file is refused)')
            [CompletionResult]::new('--data-binary', '--data-binary', [CompletionResultType]::ParameterName, 'Request body: DATA, @FILE or @- sent byte for byte (newlines kept)')
            [CompletionResult]::new('--data-raw', '--data-raw', [CompletionResultType]::ParameterName, 'Request body: DATA as given; a leading @ is not a file')
            [CompletionResult]::new('--data-urlencode', '--data-urlencode', [CompletionResultType]::ParameterName, 'URL-encoded body part: CONTENT, =CONTENT, NAME=CONTENT, @FILE or NAME@FILE')
            [CompletionResult]::new('-F', '-F ', [CompletionResultType]::ParameterName, 'Multipart form field: NAME=VALUE, NAME=@FILE (upload) or NAME=<FILE (repeatable)')
            [CompletionResult]::new('--form', '--form', [CompletionResultType]::ParameterName, 'Multipart form field: NAME=VALUE, NAME=@FILE (upload) or NAME=<FILE (repeatable)')
            [CompletionResult]::new('-x', '-x', [CompletionResultType]::ParameterName, 'Use this proxy (http://, https:// or HOST:PORT) instead of the environment''s')
            [CompletionResult]::new('--proxy', '--proxy', [CompletionResultType]::ParameterName, 'Use this proxy (http://, https:// or HOST:PORT) instead of the environment''s')
            [CompletionResult]::new('--noproxy', '--noproxy', [CompletionResultType]::ParameterName, 'Hosts reached without a proxy: comma-separated names, domains, addresses or *')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'Trust only the CA certificates (PEM) in FILE')
            [CompletionResult]::new('-E', '-E ', [CompletionResultType]::ParameterName, 'Client certificate (PEM); FILE may hold the private key too')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (PEM); FILE may hold the private key too')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Private key (PEM) for --cert')
            [CompletionResult]::new('--resolve', '--resolve', [CompletionResultType]::ParameterName, 'Connect to ADDR for HOST:PORT instead of resolving HOST (repeatable)')
            [CompletionResult]::new('--unix-socket', '--unix-socket', [CompletionResultType]::ParameterName, 'Talk HTTP over the Unix socket PATH (the URL''s host is only the Host header)')
            [CompletionResult]::new('--lock', '--lock', [CompletionResultType]::ParameterName, 'Run only while holding a lock: a file PATH (flock) or postgres://...#NAME')
            [CompletionResult]::new('--lock-wait', '--lock-wait', [CompletionResultType]::ParameterName, 'Wait this long for a busy lock before skipping (0 = skip at once)')
            [CompletionResult]::new('--busy-exit', '--busy-exit', [CompletionResultType]::ParameterName, 'Exit status when skipped because the lock is busy')
            [CompletionResult]::new('--once', '--once', [CompletionResultType]::ParameterName, 'Skip if KEY already succeeded; record KEY after success')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'Where --once markers live: a directory or postgres://... [default: $XDG_STATE_HOME/retry or ~/.local/state/retry]')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Format of stderr event lines')
            [CompletionResult]::new('--report', '--report', [CompletionResultType]::ParameterName, 'Write a JSON record of every attempt and the result to FILE')
            [CompletionResult]::new('--allow-nested', '--allow-nested', [CompletionResultType]::ParameterName, 'Retry even when running inside another retry (RETRY_DEPTH >= 1)')
            [CompletionResult]::new('--hold-stdout', '--hold-stdout', [CompletionResultType]::ParameterName, 'Spool each attempt''s stdout and write only the final attempt''s')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Print the response status line and headers before the body')
            [CompletionResult]::new('--include', '--include', [CompletionResultType]::ParameterName, 'Print the response status line and headers before the body')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Skip TLS certificate verification')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Skip TLS certificate verification')
            [CompletionResult]::new('--retry-unsafe', '--retry-unsafe', [CompletionResultType]::ParameterName, 'Allow retrying non-idempotent methods (POST, PATCH, ...) without a key')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Accepted: a status >= 400 always fails here (exit 22)')
            [CompletionResult]::new('--fail', '--fail', [CompletionResultType]::ParameterName, 'Accepted: a status >= 400 always fails here (exit 22)')
            [CompletionResult]::new('--fail-with-body', '--fail-with-body', [CompletionResultType]::ParameterName, 'On giving up with a status >= 400, output that response''s body')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'Nothing on stderr (-qq); with -S, the final error line only (-q)')
            [CompletionResult]::new('--silent', '--silent', [CompletionResultType]::ParameterName, 'Nothing on stderr (-qq); with -S, the final error line only (-q)')
            [CompletionResult]::new('-S', '-S ', [CompletionResultType]::ParameterName, 'With -s, still print the final error line')
            [CompletionResult]::new('--show-error', '--show-error', [CompletionResultType]::ParameterName, 'With -s, still print the final error line')
            [CompletionResult]::new('-L', '-L ', [CompletionResultType]::ParameterName, 'Accepted: redirects are always followed (--max-redirs 0 turns that off)')
            [CompletionResult]::new('--location', '--location', [CompletionResultType]::ParameterName, 'Accepted: redirects are always followed (--max-redirs 0 turns that off)')
            [CompletionResult]::new('-I', '-I ', [CompletionResultType]::ParameterName, 'Send HEAD; the response headers are the output')
            [CompletionResult]::new('--head', '--head', [CompletionResultType]::ParameterName, 'Send HEAD; the response headers are the output')
            [CompletionResult]::new('-O', '-O ', [CompletionResultType]::ParameterName, '-o with the URL''s last path segment as FILE')
            [CompletionResult]::new('--remote-name', '--remote-name', [CompletionResultType]::ParameterName, '-o with the URL''s last path segment as FILE')
            [CompletionResult]::new('--retry-connrefused', '--retry-connrefused', [CompletionResultType]::ParameterName, 'Accepted: a refused connection is always retried')
            [CompletionResult]::new('--retry-all-errors', '--retry-all-errors', [CompletionResultType]::ParameterName, 'Every failure is transient, 4xx included, if the request is safe to repeat')
            [CompletionResult]::new('-G', '-G ', [CompletionResultType]::ParameterName, 'Send the -d-style data in the URL''s query string, with GET')
            [CompletionResult]::new('--get', '--get', [CompletionResultType]::ParameterName, 'Send the -d-style data in the URL''s query string, with GET')
            [CompletionResult]::new('--compressed', '--compressed', [CompletionResultType]::ParameterName, 'Ask for gzip, deflate, br or zstd and decode the body (otherwise never decoded)')
            [CompletionResult]::new('--http1.1', '--http1.1', [CompletionResultType]::ParameterName, 'Use HTTP/1.1 only')
            [CompletionResult]::new('--http2', '--http2', [CompletionResultType]::ParameterName, 'Use HTTP/2: over https:// offered first by ALPN (HTTP/1.1 if the server declines, as with curl); over http:// prior knowledge (h2c), without curl''s Upgrade request')
            [CompletionResult]::new('-4', '-4', [CompletionResultType]::ParameterName, 'Resolve names to IPv4 addresses only')
            [CompletionResult]::new('--ipv4', '--ipv4', [CompletionResultType]::ParameterName, 'Resolve names to IPv4 addresses only')
            [CompletionResult]::new('-6', '-6', [CompletionResultType]::ParameterName, 'Resolve names to IPv6 addresses only')
            [CompletionResult]::new('--ipv6', '--ipv6', [CompletionResultType]::ParameterName, 'Resolve names to IPv6 addresses only')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Less on stderr: no per-attempt lines (-qq: nothing but retry''s own errors)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Less on stderr: no per-attempt lines (-qq: nothing but retry''s own errors)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More on stderr (repeatable)')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More on stderr (repeatable)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the schedule and classification rules, run nothing, exit 0')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
