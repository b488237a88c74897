#!/usr/bin/env bash
# The step of the GitHub Action (action.yml): maps nick-fields/retry's inputs to retry's
# flags (an input it cannot map fails the step with one line, before anything runs),
# installs retry from a release's assets for the runner (checking SHA256SUMS) or builds
# it with cargo when no release is at hand, runs the command, and writes the outputs
# total_attempts, exit_code and exit_error from retry's --report.
set -euo pipefail

refuse() {
    echo "::error::retry action: $*"
    exit 1
}

# whole NAME VALUE: VALUE is a whole number.
whole() {
    [[ $2 =~ ^[0-9]+$ ]] || refuse "$1: '$2' is not a whole number"
}

# boolean NAME VALUE: true or false.
boolean() {
    [[ $2 == true || $2 == false ]] || refuse "$1: '$2' is neither true nor false"
}

map_inputs() {
    args=()
    [[ -n ${INPUT_COMMAND//[[:space:]]/} ]] || refuse "command: nothing to run"
    whole max_attempts "$INPUT_MAX_ATTEMPTS"
    args+=(-a "$INPUT_MAX_ATTEMPTS")
    if [[ -n $INPUT_TIMEOUT_MINUTES && -n $INPUT_TIMEOUT_SECONDS ]]; then
        refuse "timeout_minutes and timeout_seconds: give one of them"
    elif [[ -n $INPUT_TIMEOUT_MINUTES ]]; then
        whole timeout_minutes "$INPUT_TIMEOUT_MINUTES"
        args+=(-t "${INPUT_TIMEOUT_MINUTES}m")
    elif [[ -n $INPUT_TIMEOUT_SECONDS ]]; then
        whole timeout_seconds "$INPUT_TIMEOUT_SECONDS"
        args+=(-t "${INPUT_TIMEOUT_SECONDS}s")
    else
        refuse "timeout_minutes or timeout_seconds: one of them is required"
    fi
    whole retry_wait_seconds "$INPUT_RETRY_WAIT_SECONDS"
    args+=(--delay "${INPUT_RETRY_WAIT_SECONDS}s" --backoff constant -j none)
    # An attempt that -t stopped counts as exit 124 in retry's rules.
    local retried=()
    case $INPUT_RETRY_ON in
    any) ;;
    error) args+=(--stop-on 124) ;;
    timeout) retried+=(124) ;;
    *) refuse "retry_on: '$INPUT_RETRY_ON' is not one of error, timeout, any" ;;
    esac
    if [[ -n $INPUT_RETRY_ON_EXIT_CODE ]]; then
        whole retry_on_exit_code "$INPUT_RETRY_ON_EXIT_CODE"
        retried+=("$INPUT_RETRY_ON_EXIT_CODE")
        [[ $INPUT_RETRY_ON == error ]] || retried+=(124)
    fi
    if ((${#retried[@]})); then
        args+=(--retry-on "$(printf '%s\n' "${retried[@]}" | sort -nu | paste -sd,)")
    fi
    [[ -z $INPUT_ON_RETRY_COMMAND ]] || args+=(--on-retry "$INPUT_ON_RETRY_COMMAND")
    boolean continue_on_error "$INPUT_CONTINUE_ON_ERROR"
    boolean warning_on_retry "$INPUT_WARNING_ON_RETRY"
    [[ -z $INPUT_POLLING_INTERVAL_SECONDS ]] ||
        refuse "polling_interval_seconds: retry waits for the command itself and has nothing to poll; leave it out"
    shell_words
}

# The shell's command line, as nick-fields/retry runs each shell; cmd and powershell are
# Windows' own.
shell_words() {
    case $INPUT_SHELL in
    bash) shell=(bash -c) ;;
    sh) shell=(sh -c) ;;
    pwsh) shell=(pwsh -NoProfile -Command) ;;
    python) shell=(python -c) ;;
    cmd | powershell)
        [[ ${RUNNER_OS:-} == Windows ]] || refuse "shell: '$INPUT_SHELL' runs on Windows only; this runner is ${RUNNER_OS:-not Windows}"
        if [[ $INPUT_SHELL == cmd ]]; then shell=(cmd /c); else shell=(powershell -NoProfile -Command); fi
        ;;
    *) refuse "shell: '$INPUT_SHELL' is not one of bash, sh, pwsh, python, cmd, powershell" ;;
    esac
    # new_command_on_retry: the second attempt on runs the other text ($RETRY_ATTEMPT).
    if [[ -n $INPUT_NEW_COMMAND_ON_RETRY ]]; then
        export RETRY_ACTION_FIRST=$INPUT_COMMAND RETRY_ACTION_LATER=$INPUT_NEW_COMMAND_ON_RETRY
        command=(sh -c 'c=$RETRY_ACTION_FIRST; [ "$RETRY_ATTEMPT" -le 1 ] || c=$RETRY_ACTION_LATER; exec "$@" "$c"' sh "${shell[@]}")
    else
        command=("${shell[@]}" "$INPUT_COMMAND")
    fi
}

# The runner's release target, or nothing where no release is built for it.
release_target() {
    case $(uname -s)-$(uname -m) in
    Linux-x86_64) echo x86_64-unknown-linux-gnu ;;
    Linux-aarch64 | Linux-arm64) echo aarch64-unknown-linux-gnu ;;
    esac
}

sha256_check() {
    if command -v sha256sum >/dev/null; then sha256sum -c --ignore-missing "$@"; else shasum -a 256 -c --ignore-missing "$@"; fi
}

# Installs retry in $home/bin: from the release's assets when there is a release for this
# runner, else with cargo from the Action's own checkout.
install_retry() {
    local repo=${ACTION_REPOSITORY:-${GITHUB_ACTION_REPOSITORY:-}}
    local ref=${ACTION_REF:-${GITHUB_ACTION_REF:-}}
    local url=${INPUT_RELEASE_URL:-}
    if [[ -z $url && -n $repo && -n $ref && -n ${GITHUB_SERVER_URL:-} ]]; then
        url=$GITHUB_SERVER_URL/$repo/releases/download/$ref
    fi
    local target dl=$home/download
    target=$(release_target)
    mkdir -p "$dl" "$home/bin"
    if [[ -n $url && -n $target ]] && curl -fsSL --retry 3 -o "$dl/SHA256SUMS" "${url%/}/SHA256SUMS"; then
        local name
        name=$(awk '{ sub(/^\*/, "", $2); print $2 }' "$dl/SHA256SUMS" | grep -E "^retry-[^/]+-$target\.tar\.gz$" | head -1) ||
            refuse "release_url: ${url%/}/SHA256SUMS names no tarball for $target"
        curl -fsSL --retry 3 -o "$dl/$name" "${url%/}/$name" || refuse "release_url: cannot download ${url%/}/$name"
        (cd "$dl" && sha256_check SHA256SUMS >/dev/null) || refuse "release_url: $name does not match its line in SHA256SUMS"
        tar -xzf "$dl/$name" -C "$dl"
        install -m755 "$dl/${name%.tar.gz}/retry" "$home/bin/retry"
        echo "retry action: installed $name from ${url%/}"
    else
        echo "retry action: no release at hand${url:+ at $url}${target:- for this runner}; building retry with cargo"
        command -v cargo >/dev/null || refuse "no release at hand and no cargo to build retry with: give release_url"
        cargo install --locked --quiet --path "$GITHUB_ACTION_PATH" --root "$home"
    fi
}

# Writes the outputs from retry's report.
outputs() {
    python3 - "$report" "$status" >>"$GITHUB_OUTPUT" <<'PY'
import json, sys
report, status = sys.argv[1], int(sys.argv[2])
try:
    doc = json.load(open(report))
except (OSError, ValueError):
    doc = {}
result = doc.get("result", {})
attempts = doc.get("attempts", [])
last = attempts[-1] if attempts else {}
error = "" if last.get("class") in (None, "success") else last.get("reason", "")
print(f"total_attempts={result.get('attempts', len(attempts))}")
print(f"exit_code={result.get('exit_code', status)}")
print("exit_error=" + " ".join(error.split()))
PY
}

main() {
    map_inputs
    home=${RUNNER_TEMP:-$(mktemp -d)}/retry-action
    if ! "$home/bin/retry" --version 2>/dev/null | grep -q '^retry .*('; then
        install_retry
    fi
    "$home/bin/retry" --version
    report=$home/report.json
    rm -f "$report"
    local env=()
    # Without warnings: retry's own lines only, no annotations.
    [[ $INPUT_WARNING_ON_RETRY == true ]] || env=(GITHUB_ACTIONS=false)
    status=0
    env "${env[@]}" "$home/bin/retry" "${args[@]}" --report "$report" -- "${command[@]}" || status=$?
    outputs
    if [[ $INPUT_CONTINUE_ON_ERROR == true ]]; then
        exit 0
    fi
    exit "$status"
}

main
