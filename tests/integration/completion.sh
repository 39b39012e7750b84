#!/bin/bash
# completion.sh BUILD_DIR - the bash completion of smcrctl and smcr_run
# (tools/completion/), as installed (DESTDIR under $WORK) and found by
# bash-completion's loader, driven the way bash drives it: COMP_WORDS,
# COMP_CWORD, COMP_LINE and COMP_POINT set for a command line, the
# completion function called, COMPREPLY compared with what it must hold.
# The expectations come from the programs (`smcrctl help`, each command's
# --help, `smcrctl show`, `smcr_run --help`) and from bash-completion's own
# completion of a program, not from a copy of the completion's rules.
. "$(dirname "$0")/lib.sh" "$1"
need socat iperf3 cmake
BASH_COMPLETION=/usr/share/bash-completion/bash_completion
[ -r "$BASH_COMPLETION" ] ||
	{ echo "FAIL: bash-completion is not installed (run tools/install-deps.sh --test)"; exit 1; }
export PATH=$BIN:$PATH
unset SMCR_CONF
export SMCR_RUNDIR=$WORK/run         # no smcrd until start_smcrd below

DEST=$WORK/dest
DESTDIR=$DEST cmake --install "$BUILD" > "$WORK/install.log" 2>&1 ||
	{ fail "cmake --install: $(tail -n 3 "$WORK/install.log")"; finish; }
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")
share=$(sed -n 's/^CMAKE_INSTALL_DATADIR:PATH=//p' "$BUILD/CMakeCache.txt")
share=${share:-share}              # GNUInstallDirs caches "" for its default
[[ $share == /* ]] || share=$prefix/$share
datadir=$DEST$share
for cmd in smcrctl smcr_run; do
	[ -f "$datadir/bash-completion/completions/$cmd" ] &&
		pass "installed as $share/bash-completion/completions/$cmd" ||
		fail "no $share/bash-completion/completions/$cmd"
done
# Only the completions are kept (the rest would crowd a failure's logs).
mkdir "$WORK/share"
mv "$datadir/bash-completion" "$WORK/share/" 2> /dev/null
rm -rf "$DEST"
datadir=$WORK/share

# Files for -c FILE and a program's file arguments.
mkdir "$WORK/files"
touch "$WORK/files/a.conf" "$WORK/files/b.conf"

# complete LINE: the COMPREPLY of LINE's last word (the cursor at the end),
# one per line, sorted.  A fresh bash with bash-completion, which loads the
# command's completion from the installed files alone (XDG_DATA_DIRS); the
# words split as bash splits them, "=" a word of its own.
complete_line() {
	(cd "$WORK/files" &&
	 BASH_COMPLETION_USER_DIR=$WORK/none XDG_DATA_DIRS=$datadir \
	 bash --norc --noprofile -c '
		. "$1" || exit 1
		line=$2
		read -ra COMP_WORDS <<< "${line//=/ = }"
		[[ $line == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE=$line
		COMP_POINT=${#line}
		_completion_loader "${COMP_WORDS[0]}"
		spec=$(complete -p "${COMP_WORDS[0]}") || exit 1
		fn=${spec##*-F }
		fn=${fn%% *}
		# compopt complains outside of readline: not what is tested.
		"$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" \
			"${COMP_WORDS[COMP_CWORD-1]}" 2> /dev/null
		printf "%s\n" "${COMPREPLY[@]}"' - "$BASH_COMPLETION" "$1") | sed '/^$/d' | sort
}

# expect LINE WORD...: LINE completes to exactly WORDs (none: to nothing).
expect() {
	local line=$1 got want
	shift
	got=$(complete_line "$line" | tr '\n' ' ')
	want=$(printf '%s\n' "$@" | sed '/^$/d' | sort | tr '\n' ' ')
	[ "$got" = "$want" ] && pass "'$line' completes to: ${want:-nothing}" ||
		fail "'$line' completes to '$got', expected '$want'"
}

# includes LINE WORD: WORD is among LINE's completions.
includes() {
	complete_line "$1" | grep -qxF -- "$2" && pass "'$1' offers $2" ||
		fail "'$1' does not offer $2: $(complete_line "$1" | head -n 20 | tr '\n' ' ')"
}

# same LINE1 LINE2: both complete alike, to something.
same() {
	local a b
	a=$(complete_line "$1")
	b=$(complete_line "$2")
	[ -n "$a" ] && [ "$a" = "$b" ] && pass "'$1' completes as '$2': $(tr '\n' ' ' <<< "$a")" ||
		fail "'$1' gives '$(tr '\n' ' ' <<< "$a" | cut -c 1-200)'," \
			"'$2' gives '$(tr '\n' ' ' <<< "$b" | cut -c 1-200)'"
}

# options < TEXT: the options of a --help's option lines ("  -x ...").
options() { grep '^  -' | grep -oE '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,' | sort -u; }

# smcrctl's commands.
commands=$(smcrctl help | awk '/^  [a-z]/ { print $1 }')
grep -qx set <<< "$commands" || fail "smcrctl help lists no set: $commands"
expect "smcrctl " $commands
expect "smcrctl s" $(grep '^s' <<< "$commands")
expect "smcrctl st" $(grep '^st' <<< "$commands")
expect "smcrctl -c $WORK/files/a.conf s" $(grep '^s' <<< "$commands")
expect "smcrctl -" $(smcrctl --help | options)

# Each command's options, as its --help lists them.
for cmd in $commands; do
	expect "smcrctl $cmd -" $(smcrctl "$cmd" --help | options)
done
includes "smcrctl conns --" --pid
includes "smcrctl stats -" --json

# --mode: the values its usage line lists.
modes=$(smcrctl conns --help | grep -oE -- '--mode [a-z|]+' | head -n 1 | cut -d ' ' -f 2 | tr '|' ' ')
[ -n "$modes" ] || fail "smcrctl conns --help lists no --mode values"
expect "smcrctl conns --mode " $modes
includes "smcrctl conns --mode " shm
expect "smcrctl conns --mode t" tcp
expect "smcrctl stats -i " ""
expect "smcrctl top -d " ""
expect "smcrctl conns --pid 1 --m" --mode

# check HOST: host names (/etc/hosts among them); nothing after HOST.
includes "smcrctl check localh" localhost
expect "smcrctl check localhost " ""

# -c FILE: files.
expect "smcrctl -c $WORK/files/" "$WORK/files/a.conf" "$WORK/files/b.conf"

# set: the attributes of `smcrctl show`, as name=; enumerable values.
cp "$SRC/conf/smcr.conf" "$WORK/smcr.conf"
attrs=$(smcrctl -c "$WORK/smcr.conf" show | awk 'NR > 1 { print $1 "=" }')
grep -qx rmb_size= <<< "$attrs" || fail "smcrctl show lists no rmb_size: $attrs"
expect "smcrctl set " $attrs
expect "smcrctl -c $WORK/smcr.conf set enabled=1 " $attrs
expect "smcrctl set rmb" $(grep '^rmb' <<< "$attrs")
expect "smcrctl set enabled=" 0 1
expect "smcrctl set shm=" 0 1
expect "smcrctl set log_level=" error warn info debug
expect "smcrctl set log_level=d" debug
expect "smcrctl set rmb_size=" 16 32 64 128 256 512 1024
expect "smcrctl set max_memory=" ""
expect "smcrctl set ip_addr_list=" ""

# A PID: without smcrd, the running processes; with it, the ones it knows.
includes "smcrctl conns --pid " $$
start_smcrd 24400 64
start_bg listener smcr socat TCP-LISTEN:24400,bind=127.0.0.1,reuseaddr EXEC:cat
wait_listen 24400 "$LAST_PID"
listener=$LAST_PID
until_true sh -c "smcrctl status | grep -qE '^ +$listener '" ||
	fail "smcrd does not list the preloaded socat ($listener): $(smcrctl status)"
expect "smcrctl conns --pid " $listener

# smcr_run: its options, -l's levels, then a command and its arguments.
expect "smcr_run -" $(smcr_run --help | options)
expect "smcr_run -l " error warn info debug
includes "smcr_run so" socat
includes "smcr_run -l debug so" socat
includes "smcr_run -- so" socat
same "smcr_run socat " "socat "
includes "smcr_run socat " a.conf
same "smcr_run iperf3 --f" "iperf3 --f"
same "smcr_run -l info iperf3 --f" "iperf3 --f"
includes "smcr_run iperf3 --f" --format
finish
