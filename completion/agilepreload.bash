# agilepreload.bash - bash-completion for agilerun(1) and agilestat(1),
# installed as completions/agilerun with completions/agilestat a link to
# it (bash-completion loads a command's file by the command's name).
#
# Completes the options; inside a -d/--dest SPEC ('NAME=DEST key=value
# ...', quoted so its spaces stay in one word) the key names after a
# space and the values of the keys that take one of a few words (preset,
# anchor, pace, proto, over, breaker, fleet, law, concurrency); after "--"
# or the first word that is not an option, the command and its arguments.
# The lists below are those of src/common/rules_keys.c's key table and of
# agilerun's and agilestat's --help: tests/tools/completion.sh compares
# them with the source and with what the programs accept, so they cannot
# drift apart silently.

# Every key of AGILE_DEST_ and AGILE_LISTEN_ variables, in
# agilepreload(7)'s order.
_agilepreload_keys='max min floor probe initial slo anchor preset
tail_factor tail_tolerance tick up down gain inflation deadband
backoff_ticks recover_ticks slow_start recover_ramp slow_half_life
slow_down_half_life max_baseline_rise delivered_share knee_ramp
probe_acceleration goodput_cut pace inflight concurrency acquire_timeout breaker
breaker_k breaker_protection breaker_window breaker_floor breaker_probe
breaker_buckets quota window over proto exclude connect_timeout retry
retry_base retry_cap retry_factor retry_jitter key_rate keys shed
shed_window shed_buckets shed_latency shed_cool shed_beta shed_floor
shed_response retry_after concurrency_min concurrency_initial
concurrency_max baseline_probe overload unreachable ignore cache_hit client_rate
client_prefix client_key clients law law_smoothing law_increase
law_decrease law_utilization law_tolerance law_warmup law_min_decay
law_jitter fleet_max fleet redis_timeout'

# The words a key's value may be, for the keys that take one of a few.
_agilepreload_values() {
	case $1 in
	preset) echo 'none balanced latency-first throughput-first seed' ;;
	anchor) echo 'unset baseline slo' ;;
	pace) echo 'request connect' ;;
	inflight) echo 'auto off' ;;
	proto) echo 'http grpc redis postgres mysql memcached none' ;;
	over) echo 'refuse wait' ;;
	breaker) echo 'sre' ;;
	fleet) echo 'static adaptive' ;;
	law) echo 'agile aimd vegas gradient' ;;
	concurrency) echo 'adaptive adaptive,law=agile adaptive,law=aimd adaptive,law=vegas adaptive,law=gradient' ;;
	esac
}

_agilerun_options='--dest --state --verbose --seccomp --help'
_agilestat_options='--state --json --prometheus --watch --history --config
--serve --help'

# Complete the SPEC being typed in $1 (the word as the line holds it, an
# opening quote and all): a key name after its last space, a value after
# a key's "=".  The replies are the whole word without the quote, as
# readline, which completes inside the quote, replaces it.  Readline
# closes the quote after a reply that is the only one, which would end
# the SPEC after its first key; so a lone reply goes with a second one that
# differs only at its end (the key without its "=", the value with the
# space that starts the next key), and what is inserted is what they
# share: the key's name, or the value.
_agilepreload_spec() {
	local spec=$1 head last key value word
	spec=${spec#[\'\"]}
	[[ $spec == *' '* ]] || return 0
	head=${spec% *}' '
	last=${spec##* }
	compopt -o nospace 2>/dev/null
	if [[ $last == *=* ]]; then
		key=${last%%=*}
		value=${last#*=}
		for word in $(_agilepreload_values "$key"); do
			[[ $word == "$value"* ]] && COMPREPLY+=("$head$key=$word")
		done
		((${#COMPREPLY[@]} == 1)) && COMPREPLY+=("${COMPREPLY[0]} ")
	else
		for word in $_agilepreload_keys; do
			[[ $word == "$last"* ]] && COMPREPLY+=("$head$word=")
		done
		((${#COMPREPLY[@]} == 1)) && COMPREPLY+=("${COMPREPLY[0]%=}")
	fi
	return 0
}

_agilerun() {
	local cur prev words cword i
	_init_completion -n = || return
	# The first word that is neither an option nor an option's argument
	# (or the one after "--") starts the command: complete it as its own.
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		--) _command_offset $((i + 1)); return ;;
		-d | --dest | -s | --state) ((i++)) ;;
		-*) ;;
		*) _command_offset "$i"; return ;;
		esac
	done
	case $prev in
	-d | --dest) _agilepreload_spec "$cur"; return ;;
	-s | --state) _filedir; return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$_agilerun_options -d -s -v -h" -- "$cur"))
		return
	fi
	_command_offset "$cword"
}

_agilestat() {
	local cur prev words cword
	_init_completion || return
	case $prev in
	-s | --state) _filedir; return ;;
	-S | --serve) COMPREPLY=($(compgen -W '127.0.0.1:9464 [::1]:9464 unix:' -- "$cur")); return ;;
	-w | --watch) return ;;
	esac
	COMPREPLY=($(compgen -W "$_agilestat_options -s -j -p -w -H -c -S -h" -- "$cur"))
}

complete -F _agilerun agilerun
complete -F _agilestat agilestat
