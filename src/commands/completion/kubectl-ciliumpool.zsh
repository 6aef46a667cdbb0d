#compdef kubectl-ciliumpool
# zsh completion for kubectl-ciliumpool (`kubectl-ciliumpool completion zsh`). Every candidate
# comes from the plugin (`kubectl-ciliumpool __complete`, Cobra's protocol): commands, flags, enum
# values and the pool names, ranges and CIDRs it reads from -f or the cluster.
_kubectl_ciliumpool() {
    local out directive line candidate description
    local -a candidates
    out=$("${words[1]}" __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null) || return 1
    directive=${out##*:}
    for line in "${(@f)${out%:*}}"; do
        [[ -n $line ]] || continue
        candidate=${line%%$'\t'*}
        description=''
        [[ $line == *$'\t'* ]] && description=${line#*$'\t'}
        # _describe separates a candidate from its description at the first unescaped ':'.
        candidates+=("${candidate//:/\\:}${description:+:$description}")
    done
    if (( ${#candidates} )); then
        if (( directive & 2 )); then
            _describe -t values value candidates -S ''
        else
            _describe -t values value candidates
        fi
    elif (( ! (directive & 4) )); then
        _files
    fi
}
if [[ ${funcstack[1]} == _kubectl-ciliumpool ]]; then
    _kubectl_ciliumpool "$@"
else
    compdef _kubectl_ciliumpool kubectl-ciliumpool
fi
