#compdef retry
# zsh completion for retry, written from the clap definition in src/cli/ (do not
# edit: regenerate as the README says). Before the target: retry's options and their
# values. From the target on (the first operand, or the word after --): a command name,
# then that command's own completion (_normal). Nothing for a URL or after it.

# The target's words only ('*::' below): $words[1] is the command name or the URL.
_retry_target() {
    # _arguments -S leaves a -- that comes straight after retry in $words.
    if [[ $words[1] == -- ]]; then
        shift words
        ((CURRENT--))
    fi
    if [[ $words[1] == (http|https)://* ]]; then
        _message 'a URL: no file names, nothing after it'
        return 1
    fi
    _normal
}

_retry() {
    local -a specs
    specs=(
@ARGUMENTS@
    )
    _arguments -s -S -A '-*' : $specs '*:: :_retry_target'
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _retry "$@"
else
    compdef _retry retry
fi
