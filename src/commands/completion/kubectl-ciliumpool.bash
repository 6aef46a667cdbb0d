# bash completion for kubectl-ciliumpool (`kubectl-ciliumpool completion bash`). Every candidate
# comes from the plugin (`kubectl-ciliumpool __complete`, Cobra's protocol): commands, flags, enum
# values and the pool names, ranges and CIDRs it reads from -f or the cluster.
_kubectl_ciliumpool() {
    # The words as typed: bash also splits at ':' and '=', which IPv6 CIDRs and --flag=value hold.
    local typed=${COMP_LINE:0:COMP_POINT}
    local -a words
    read -ra words <<<"$typed"
    [[ -z $typed || $typed == *[[:space:]] ]] && words+=('')
    local out directive
    out=$("${words[0]}" __complete -- "${words[@]:1}" 2>/dev/null) || return
    directive=${out##*:}
    # Readline replaces only the text after the word's last ':' or '=' (COMP_WORDBREAKS): trim
    # what precedes it from each candidate.
    local current=${words[${#words[@]}-1]} before='' line candidate
    [[ $current == *[:=]* ]] && before=${current%"${current##*[:=]}"}
    COMPREPLY=()
    while IFS= read -r line; do
        [[ -n $line ]] || continue
        candidate=${line%%$'\t'*}
        COMPREPLY+=("${candidate#"$before"}")
    done <<<"${out%:*}"
    (( directive & 2 )) && compopt -o nospace
    (( ${#COMPREPLY[@]} == 0 && (directive & 4) == 0 )) && compopt -o default
    return 0
}
complete -F _kubectl_ciliumpool kubectl-ciliumpool
