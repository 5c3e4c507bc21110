# Bash completion for memtap: its commands, each command's options and the values they take.
# Installed as <datadir>/bash-completion/completions/memtap; or `source` it. The option lists
# follow `memtap CMD --help` (tests/e2e/completion_test.cpp holds the two together).

# The options of each command; those that take a value are also in _memtap_valued.
_memtap_options() {
  local window="--screenshot --screenshot-after --size --view --device --stats"
  local report="--json --low-memory --lazy-used-ms --delayed-free-ms --long-idle-ms --capacity-mb"
  case $1 in
    run) echo "-h --help -o --compact --connect --keys --stacks --stack-min-size --torch-ops" \
      "--no-torch-pool --max-processes --gui $window" ;;
    record) echo "-h --help -l --listen -o --compact --keys --insecure --max-processes" ;;
    report) echo "-h --help --top $report" ;;
    replay) echo "-h --help --speed --top $report" ;;
    diff) echo "-h --help --top $report" ;;
    check) echo "-h --help --max-peak --max-leak-per-step --max-growth --max-fragmentation" \
      "--max-peak-increase --no-oom --baseline --device --strict --low-memory" ;;
    monitor) echo "-h --help -l --listen -o --compact --keys --insecure --max-processes --at --range" \
      "$window" ;;
    export) echo "-h --help -o --format --pid" ;;
    import | recover) echo "-h --help -o" ;;
    keygen) echo "-h --help" ;;
  esac
}

# Whether option $1 takes a value (the next word).
_memtap_valued() {
  case $1 in
    -o | -l | --listen | --connect | --keys | --stacks | --stack-min-size | --max-processes | \
      --screenshot | --screenshot-after | --size | --view | --device | --at | --range | --top | \
      --lazy-used-ms | --delayed-free-ms | --long-idle-ms | --capacity-mb | --speed | --format | \
      --pid | --max-peak | --max-leak-per-step | --max-growth | --max-fragmentation | \
      --max-peak-increase | --baseline) return 0 ;;
  esac
  return 1
}

_memtap_files() {
  compopt -o filenames 2>/dev/null
  COMPREPLY=($(compgen -f -- "$1"))
}

_memtap() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local commands="run record report replay diff check monitor export import recover keygen help"
  COMPREPLY=()
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return
  fi
  local cmd=${COMP_WORDS[1]}
  if [[ $cmd == help ]]; then
    ((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W "${commands% help}" -- "$cur"))
    return
  fi

  # `memtap run`: the words from the program on (after --, or the first that is no option)
  # are the program's own.
  if [[ $cmd == run ]]; then
    local i=2
    while ((i < COMP_CWORD)); do
      local w=${COMP_WORDS[i]}
      if [[ $w == -- ]]; then
        ((i++))
        break
      elif _memtap_valued "$w"; then
        ((i += 2))
      elif [[ $w == -* ]]; then
        ((i++))
      else
        break
      fi
    done
    if ((i == COMP_CWORD)) && [[ $cur != -* || ${COMP_WORDS[i - 1]} == -- ]] &&
      ! _memtap_valued "$prev"; then
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
      return
    elif ((i < COMP_CWORD)); then
      _memtap_files "$cur"
      return
    fi
  fi

  case $prev in
    -o | --screenshot | --baseline)
      _memtap_files "$cur"
      return
      ;;
    --keys)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -d -- "$cur"))
      return
      ;;
    --format)
      COMPREPLY=($(compgen -W "msmemscope-db msmemscope-csv operator-memory memory-record torch-snapshot" -- "$cur"))
      return
      ;;
    --view)
      COMPREPLY=($(compgen -W "curves lifetime pool breakdown flame blocks events findings" -- "$cur"))
      return
      ;;
    --speed)
      COMPREPLY=($(compgen -W "max 1x 10x" -- "$cur"))
      return
      ;;
    --stacks)
      COMPREPLY=($(compgen -W "python c python,c" -- "$cur"))
      return
      ;;
    --device)
      COMPREPLY=($(compgen -W "cpu 0 1 2 3 4 5 6 7" -- "$cur"))
      return
      ;;
    --at)
      COMPREPLY=($(compgen -W "peak" -- "$cur"))
      return
      ;;
  esac
  if _memtap_valued "$prev"; then
    return  # a number, an endpoint, a size: nothing to offer
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_memtap_options "$cmd")" -- "$cur"))
  elif [[ $cmd == keygen ]]; then
    compopt -o filenames 2>/dev/null
    COMPREPLY=($(compgen -d -- "$cur"))
  elif [[ $cmd != record ]]; then
    _memtap_files "$cur"
  fi
}

complete -F _memtap memtap
