complete -c retry -s a -l attempts -d 'Total attempts, the first included (1 = never retry)' -r
complete -c retry -l delay -d 'Base delay before the first retry' -r
complete -c retry -l max-delay -d 'Cap on any one backoff sleep, applied before jitter' -r
complete -c retry -l backoff -d 'How the delay grows from one retry to the next' -r -f -a "exponential\t'delay * factor^(n-1), capped by --max-delay'
linear\t'delay * n, capped by --max-delay'
constant\t'delay every time'"
complete -c retry -l factor -d 'Exponential growth factor, above 1 (at most 1000)' -r
complete -c retry -s j -l jitter -d 'How each sleep d is randomised, so clients that failed together return apart' -r -f -a "full\t'A uniform draw from 0 to d: spreads a crowd of clients the most'
equal\t'd/2 plus a uniform draw from 0 to d/2'
decorrelated\t'min(--max-delay, a uniform draw from --delay to 3 * the previous sleep)'
none\t'Exactly d: clients that failed together come back together'"
complete -c retry -s t -l timeout -d 'Limit on one attempt; an attempt that runs out is a transient failure' -r
complete -c retry -l max-time -d 'Wall-clock budget for the whole run' -r
complete -c retry -l seed -d 'Seed the jitter, for reproducible schedules' -r
complete -c retry -l profile -d 'Exit-code vocabulary of a known tool; auto picks one from the command\'s name' -r -f -a "auto\t'Pick from the command\'s base name (curl, wget, ssh/scp/sftp, rsync, git), else generic'
generic\t'Exit codes only: 0 success; 126, 127 and most sysexits permanent; the rest transient'
curl\t'curl\'s exit codes, and for exit 22 the HTTP status it prints on stderr'
wget\t'wget\'s exit codes, and for exit 8 the HTTP status it prints on stderr'
ssh\t'ssh, scp, sftp: 255 (connection failure) is transient, other codes are the remote\'s'
rsync\t'rsync\'s network and partial-transfer codes are transient'
git\t'git: 128 is transient only when stderr shows a network failure'"
complete -c retry -l stop-on -d 'Exit codes that are permanent failures, e.g. 2,64-78' -r
complete -c retry -l retry-on -d 'Exit codes that are retried; every other non-zero exit becomes permanent, e.g. 75' -r
complete -c retry -l success-on -d 'Exit codes that count as success, e.g. 0,1 for grep' -r
complete -c retry -l stop-on-output -d 'An output line matching REGEX makes the attempt a permanent failure (repeatable)' -r
complete -c retry -l retry-on-output -d 'An output line matching REGEX makes the attempt transient, even on exit 0 (repeatable)' -r
complete -c retry -l stdin -d 'Where the command\'s stdin comes from on each attempt' -r -f -a "auto\t'Regular file: rewind; pipe or socket: record and replay; terminal: inherit'
replay\t'Record what the first attempt reads and replay it to later attempts'
inherit\t'Pass retry\'s stdin through untouched'
null\t'Give every attempt /dev/null'"
complete -c retry -l kill-after -d 'After --timeout\'s SIGTERM, wait this long before SIGKILL' -r
complete -c retry -s X -l request -d 'HTTP method; default GET, or POST when a body is given' -r
complete -c retry -s H -l header -d 'Request header \'Name: value\' (repeatable); @FILE reads header lines from FILE' -r
complete -c retry -s d -l data -d 'Request body: DATA, @FILE or @- for stdin; read once, sent identically every attempt' -r
complete -c retry -l json -d 'JSON request body (DATA, @FILE or @-), with Content-Type and Accept set to JSON' -r
complete -c retry -s o -l output -d 'Write the successful body to FILE atomically; FILE is untouched if the run fails' -r -F
complete -c retry -l connect-timeout -d 'Limit on connecting' -r
complete -c retry -l max-redirs -d 'Redirects followed (0 = none)' -r
complete -c retry -l idempotency-key -d 'Send an idempotency key with every attempt: auto makes one UUID v4 for the run' -r
complete -c retry -l idempotency-header -d 'Header name for the idempotency key' -r
complete -c retry -l retry-on-status -d 'HTTP statuses that are retried (overrides the built-in classes)' -r
complete -c retry -l stop-on-status -d 'HTTP statuses that stop at once (overrides the built-in classes)' -r
complete -c retry -l max-retry-after -d 'Longest Retry-After to obey; a longer one ends the run at once' -r
complete -c retry -s u -l user -d 'Basic authentication; the password is shown as *** everywhere' -r
complete -c retry -s A -l user-agent -d 'User-Agent header ("" sends none)' -r
complete -c retry -s e -l referer -d 'Referer header' -r
complete -c retry -s b -l cookie -d 'Cookie header \'NAME=VALUE; NAME2=VALUE2\' (repeatable; curl\'s cookie file is refused)' -r
complete -c retry -l data-binary -d 'Request body: DATA, @FILE or @- sent byte for byte (newlines kept)' -r
complete -c retry -l data-raw -d 'Request body: DATA as given; a leading @ is not a file' -r
complete -c retry -l data-urlencode -d 'URL-encoded body part: CONTENT, =CONTENT, NAME=CONTENT, @FILE or NAME@FILE' -r
complete -c retry -s F -l form -d 'Multipart form field: NAME=VALUE, NAME=@FILE (upload) or NAME=<FILE (repeatable)' -r
complete -c retry -s x -l proxy -d 'Use this proxy (http://, https:// or HOST:PORT) instead of the environment\'s' -r
complete -c retry -l noproxy -d 'Hosts reached without a proxy: comma-separated names, domains, addresses or *' -r
complete -c retry -l cacert -d 'Trust only the CA certificates (PEM) in FILE' -r -F
complete -c retry -s E -l cert -d 'Client certificate (PEM); FILE may hold the private key too' -r -F
complete -c retry -l key -d 'Private key (PEM) for --cert' -r -F
complete -c retry -l resolve -d 'Connect to ADDR for HOST:PORT instead of resolving HOST (repeatable)' -r
complete -c retry -l unix-socket -d 'Talk HTTP over the Unix socket PATH (the URL\'s host is only the Host header)' -r -F
complete -c retry -l lock -d 'Run only while holding a lock: a file PATH (flock) or postgres://...#NAME' -r
complete -c retry -l lock-wait -d 'Wait this long for a busy lock before skipping (0 = skip at once)' -r
complete -c retry -l busy-exit -d 'Exit status when skipped because the lock is busy' -r
complete -c retry -l once -d 'Skip if KEY already succeeded; record KEY after success' -r
complete -c retry -l state -d 'Where --once markers live: a directory or postgres://... [default: $XDG_STATE_HOME/retry or ~/.local/state/retry]' -r
complete -c retry -l log-format -d 'Format of stderr event lines' -r -f -a "text\t'Lines starting with "retry: "'
json\t'JSON Lines, one event per line'"
complete -c retry -l report -d 'Write a JSON record of every attempt and the result to FILE' -r -F
complete -c retry -l generate -d 'Write a completion script or the man page to stdout' -r -f -a "bash\t''
zsh\t''
fish\t''
elvish\t''
powershell\t''
man\t''"
complete -c retry -l allow-nested -d 'Retry even when running inside another retry (RETRY_DEPTH >= 1)'
complete -c retry -l hold-stdout -d 'Spool each attempt\'s stdout and write only the final attempt\'s'
complete -c retry -s i -l include -d 'Print the response status line and headers before the body'
complete -c retry -s k -l insecure -d 'Skip TLS certificate verification'
complete -c retry -l retry-unsafe -d 'Allow retrying non-idempotent methods (POST, PATCH, ...) without a key'
complete -c retry -s G -l get -d 'Send the -d-style data in the URL\'s query string, with GET'
complete -c retry -l compressed -d 'Ask for gzip, deflate, br or zstd and decode the body (otherwise never decoded)'
complete -c retry -l http1.1 -d 'Use HTTP/1.1 only'
complete -c retry -l http2 -d 'Use HTTP/2: over https:// offered first by ALPN (HTTP/1.1 if the server declines, as with curl); over http:// prior knowledge (h2c), without curl\'s Upgrade request'
complete -c retry -s 4 -l ipv4 -d 'Resolve names to IPv4 addresses only'
complete -c retry -s 6 -l ipv6 -d 'Resolve names to IPv6 addresses only'
complete -c retry -s q -l quiet -d 'Less on stderr: no per-attempt lines (-qq: nothing but retry\'s own errors)'
complete -c retry -s v -l verbose -d 'More on stderr (repeatable)'
complete -c retry -l dry-run -d 'Print the schedule and classification rules, run nothing, exit 0'
complete -c retry -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retry -s V -l version -d 'Print version'
