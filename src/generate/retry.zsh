#compdef retry
# zsh completion for retry, written from the clap definition in src/cli/ (do not
# edit: regenerate as the README says). Before the target: retry's options and their
# values. From the target on (the first operand, or the word after --): a command name,
# then that command's own completion (_normal). After a URL, retry's options again
# (curl's habit), and nothing for a second operand.

# The target's words only ('*::' below): $words[1] is the command name or the URL.
_retry_target() {
    # _arguments -S leaves a -- that comes straight after retry in $words.
    local dashed=0
    if [[ $words[1] == -- ]]; then
        shift words
        ((CURRENT--))
        dashed=1
    fi
    if [[ $words[1] == (#i)(http|https)://* ]]; then
        # After -- the URL's words are a command's, which retry refuses: nothing.
        if ((CURRENT == 1 || dashed)); then
            _message 'a URL: no file names'
            return 1
        fi
        # After the URL, retry's options again (curl's habit); no second operand.
        _arguments -s -S : $specs
        return
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
