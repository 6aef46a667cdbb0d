# fish completion for kubectl-ciliumpool (`kubectl-ciliumpool completion fish`). Every candidate
# comes from the plugin (`kubectl-ciliumpool __complete`, Cobra's protocol): commands, flags, enum
# values and the pool names, ranges and CIDRs it reads from -f or the cluster.
function __kubectl_ciliumpool_complete
    set -l words (commandline -opc)
    set -l current (commandline -ct)
    set -l out ($words[1] __complete -- $words[2..-1] $current 2>/dev/null)
    or return
    set -l directive (string replace ':' '' -- $out[-1])
    set -e out[-1]
    # fish reads `candidate<TAB>description` itself.
    for line in $out
        test -n "$line"; and echo $line
    end
    if test (count $out) -eq 0; and test (math "bitand($directive, 4)") -eq 0
        __fish_complete_path $current
    end
end
complete -c kubectl-ciliumpool -f -a '(__kubectl_ciliumpool_complete)'
