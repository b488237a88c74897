# bash completion for retry, written from the clap definition in src/cli/ (do not
# edit: regenerate as the README says). Before the target: retry's options and their
# values. From the target on (the first operand, or the word after --): a command name,
# then that command's own completion (through bash-completion when loaded). After a
# URL, retry's options again (curl's habit), and nothing for a second operand.

# The words up to the cursor with the pieces bash splits at '=' and ':' joined again:
# _retry_words, and _retry_starts (each joined word's index in COMP_WORDS).
_retry_join_words() {
    local line=${COMP_LINE:0:COMP_POINT} i word rest
    _retry_words=() _retry_starts=()
    for ((i = 0; i <= COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        rest=${line#"${line%%[![:space:]]*}"}
        if ((i > 0)) && [[ $rest == "$line" ]] &&
            [[ $word == [=:]* || ${_retry_words[-1]} == *[=:] ]]; then
            _retry_words[-1]+=$word
        else
            _retry_words+=("$word")
            _retry_starts+=("$i")
        fi
        line=${rest#"$word"}
    done
}

# Whether a cluster of short options (-qj) ends with one that takes the next word.
_retry_short_waits() {
    local cluster=${1#-} c
    while [[ $cluster ]]; do
        c=${cluster:0:1} cluster=${cluster:1}
        case $c in
        [ajtmXHdowDCuAebTFxE]) [[ -z $cluster ]]; return ;;
        esac
    done
    return 1
}

# Sets _retry_target to the index in _retry_words where the target starts (-1 while
# the current word is still retry's), and _retry_option to the option whose value is
# being completed, if any. Options may follow a URL, as curl takes them: the scan goes
# on past it, and a second operand (or -- after it) makes the URL the target again, for
# which nothing is offered.
_retry_scan() {
    local last=$((${#_retry_words[@]} - 1)) i=1 word url=
    _retry_target=-1 _retry_option=
    while ((i < last)); do
        word=${_retry_words[i]}
        case $word in
        --)
            _retry_target=${url:-$((i + 1))}
            return
            ;;
        --*=*) ;;
        --attempts|--delay|--max-delay|--backoff|--factor|--jitter|--delays|--consecutive|--timeout|--max-time|--seed|--profile|--stop-on|--retry-on|--success-on|--stop-on-output|--retry-on-output|--success-on-output|--stdin|--kill-after|--signal|--request|--header|--data|--json|--output|--connect-timeout|--max-redirs|--idempotency-key|--idempotency-header|--retry-on-status|--stop-on-status|--max-retry-after|--write-out|--dump-header|--retry|--retry-delay|--retry-max-time|--continue-at|--user|--proto|--proto-redir|--user-agent|--referer|--cookie|--data-binary|--data-raw|--data-urlencode|--upload-file|--form|--proxy|--noproxy|--cacert|--cert|--key|--resolve|--unix-socket|--lock|--lock-wait|--busy-exit|--once|--state|--lease-ttl|--on-retry|--on-give-up|--on-success|--hook-timeout|--schedule|--crontab|--job-output|--job|--catch-up|--catch-up-window|--overlap|--grace|--tz|--metrics-listen|--retry-budget|--budget-size|--budget-ratio|--circuit|--circuit-failures|--circuit-cooldown|--circuit-exit|--throttled|--splay|--log-format|--report|--otel) ((i++)) ;;
        --*) ;;
        -?*) _retry_short_waits "$word" && ((i++)) ;;
        *)
            if [[ -z $url && ( ${word,,} == http://* || ${word,,} == https://* ) ]]; then
                url=$i
            else
                _retry_target=${url:-$i}
                return
            fi
            ;;
        esac
        ((i++))
    done
    word=${_retry_words[last]}
    if ((i > last)); then
        _retry_option=${_retry_words[last - 1]}
        [[ $_retry_option == --* ]] || _retry_option=-${_retry_option: -1}
    elif [[ $word == --?*=* ]]; then
        _retry_option=${word%%=*}
    elif [[ -z $url && $word != -* ]]; then
        _retry_target=$last
    elif [[ $url && $word && $word != -* ]]; then
        _retry_target=$url
    fi
}

# COMPREPLY from `compgen "$@" -- TYPED`, trimmed to the part of the word readline
# replaces (it starts after the last '=' or ':' bash split at).
_retry_reply() {
    local typed=$1 word=${COMP_WORDS[COMP_CWORD]}
    shift
    [[ -z ${word//[=:]/} ]] && word=
    mapfile -t COMPREPLY < <(compgen "$@" -- "$typed")
    local strip=${typed%"$word"}
    if [[ $strip ]]; then
        COMPREPLY=("${COMPREPLY[@]#"$strip"}")
    fi
}

# The value of option $1, typed so far as $2.
_retry_complete_value() {
    case $1 in
    --backoff) _retry_reply "$2" -W 'exponential linear constant fibonacci' ;;
    -j|--jitter) _retry_reply "$2" -W 'full equal decorrelated none' ;;
    --profile) _retry_reply "$2" -W 'auto generic curl wget ssh rsync git' ;;
    --stdin) _retry_reply "$2" -W 'auto replay inherit null' ;;
    -X|--request) _retry_reply "$2" -W 'GET HEAD POST PUT DELETE PATCH OPTIONS TRACE' ;;
    -o|--output) compopt -o filenames; _retry_reply "$2" -f ;;
    -D|--dump-header) compopt -o filenames; _retry_reply "$2" -f ;;
    -T|--upload-file) compopt -o filenames; _retry_reply "$2" -f ;;
    --cacert) compopt -o filenames; _retry_reply "$2" -f ;;
    -E|--cert) compopt -o filenames; _retry_reply "$2" -f ;;
    --key) compopt -o filenames; _retry_reply "$2" -f ;;
    --unix-socket) compopt -o filenames; _retry_reply "$2" -f ;;
    --lock) compopt -o filenames; _retry_reply "$2" -f ;;
    --state) compopt -o filenames; _retry_reply "$2" -d ;;
    --crontab) compopt -o filenames; _retry_reply "$2" -f ;;
    --job-output) _retry_reply "$2" -W 'labelled raw' ;;
    --catch-up) _retry_reply "$2" -W 'none latest all' ;;
    --overlap) _retry_reply "$2" -W 'skip queue allow replace' ;;
    --throttled) _retry_reply "$2" -W 'exit wait' ;;
    --log-format) _retry_reply "$2" -W 'text json' ;;
    --report) compopt -o filenames; _retry_reply "$2" -f ;;
    esac
}

# Without bash-completion: command names, then the command's own -F function if it
# has one registered, else file names.
_retry_command_offset() {
    local start=$1 cword=$((COMP_CWORD - $1)) spec func
    local -a words=("${COMP_WORDS[@]:start:cword+1}")
    local cur=${words[cword]}
    if ((cword == 0)); then
        compopt -o filenames
        mapfile -t COMPREPLY < <(compgen -d -c -- "$cur")
        return
    fi
    spec=$(complete -p -- "${words[0]}" 2>/dev/null ||
        complete -p -- "${words[0]##*/}" 2>/dev/null)
    if [[ $spec == *" -F "* ]]; then
        func=${spec#* -F } func=${func%% *}
        COMP_WORDS=("${words[@]}") COMP_CWORD=$cword
        COMP_LINE=${words[*]} COMP_POINT=${#COMP_LINE}
        "$func" "${words[0]}" "$cur" "${words[cword - 1]}"
    else
        compopt -o filenames
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
}

_retry_complete_target() {
    local first=${_retry_words[_retry_target]} start=${_retry_starts[_retry_target]}
    if [[ $first == http://* || $first == https://* ]]; then
        return # a URL is the whole target: no file names for it
    fi
    if declare -F _comp_command_offset >/dev/null; then
        _comp_command_offset "$start"
    elif declare -F _command_offset >/dev/null; then
        _command_offset "$start"
    else
        _retry_command_offset "$start"
    fi
}

_retry() {
    local _retry_words _retry_starts _retry_target _retry_option
    COMPREPLY=()
    _retry_join_words
    _retry_scan
    if ((_retry_target >= 0)); then
        _retry_complete_target
    elif [[ $_retry_option ]]; then
        local typed=${_retry_words[-1]}
        [[ $typed == --?*=* ]] && typed=${typed#*=}
        _retry_complete_value "$_retry_option" "$typed"
    else
        mapfile -t COMPREPLY < <(compgen -W "-a --attempts --delay --max-delay --backoff --factor -j --jitter --delays --consecutive --until-failure --ignore-retry-after -t -m --timeout --max-time --seed --allow-nested --profile --stop-on --retry-on --success-on --stop-on-output --retry-on-output --success-on-output --stdin --hold-stdout --no-hold-stdout --hold-stderr --kill-after --signal --preserve-status -X --request -H --header -d --data --json -o --output -i --include --connect-timeout -k --insecure --max-redirs --idempotency-key --idempotency-header --retry-unsafe --retry-on-status --stop-on-status --max-retry-after -f --fail --fail-with-body -s --silent -S --show-error -L --location -I --head -w --write-out -D --dump-header -O --remote-name --retry --retry-delay --retry-max-time --retry-connrefused --retry-all-errors -C --continue-at -u --user --basic --proto --proto-redir -A --user-agent -e --referer -b --cookie --data-binary --data-raw --data-urlencode -T --upload-file -g --globoff -G --get -F --form --compressed -x --proxy --noproxy --cacert -E --cert --key --http1.1 --http2 --resolve -4 --ipv4 -6 --ipv6 --unix-socket --lock --lock-wait --busy-exit --once --state --lease-ttl --on-retry --on-give-up --on-success --hook-timeout --schedule --crontab --job-output --job --catch-up --catch-up-window --overlap --grace --tz --metrics-listen --retry-budget --budget-size --budget-ratio --circuit --circuit-failures --circuit-cooldown --circuit-exit --throttled --splay -q --quiet -v --verbose --log-format --report --otel --dry-run -h --help -V --version --" -- "${COMP_WORDS[COMP_CWORD]}")
    fi
}

complete -F _retry retry
