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
            case @VALUE_LONGS@
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
        if string match -qr -- @VALUE_SHORTS@ $chars[$j]
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
@OPTIONS@
