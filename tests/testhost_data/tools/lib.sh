# Shared by the test host's fake tools (sourced, POSIX sh). @ROOT_Q@ is filled in when the host is built.
FAKE_ROOT=@ROOT_Q@
FAKE_DATA="$FAKE_ROOT/fake"
PATH=/usr/local/bin:/usr/bin:/bin
LC_ALL=C
export PATH LC_ALL
_sq="'"

# _q WORD: set _Q to WORD quoted the way Python's shlex.quote does it (no subshell, no fork).
_q() {
    case $1 in
        '') _Q="''" ;;
        *[!A-Za-z0-9_@%+=:,./-]*)
            _s=$1
            _Q=
            while :; do
                case $_s in
                    *"$_sq"*)
                        _Q="$_Q${_s%%"$_sq"*}$_sq\"$_sq\"$_sq"
                        _s=${_s#*"$_sq"}
                        ;;
                    *)
                        _Q="$_Q$_s"
                        break
                        ;;
                esac
            done
            _Q="$_sq$_Q$_sq"
            ;;
        *) _Q=$1 ;;
    esac
}

# fake_log_call ARGS...: append "TOOL ARG..." (shell-quoted) to calls.log; the line stays in $FAKE_LINE.
fake_log_call() {
    _q "$FAKE_TOOL"
    FAKE_LINE=$_Q
    for _a in "$@"; do
        _q "$_a"
        FAKE_LINE="$FAKE_LINE $_Q"
    done
    printf '%s\n' "$FAKE_LINE" >> "$FAKE_ROOT/calls.log"
}

# fake_override CASE: if the test set an output for CASE (TestHost.set_output), print it and exit.
fake_override() {
    _f="$FAKE_DATA/overrides/$FAKE_TOOL/$1"
    [ -f "$_f.out" ] || return 0
    cat "$_f.out"
    if [ -f "$_f.err" ]; then cat "$_f.err" >&2; fi
    _rc=0
    if [ -f "$_f.rc" ]; then read -r _rc < "$_f.rc"; fi
    exit "$_rc"
}

FAKE_JOURNALCTL=@JOURNALCTL_Q@
FAKE_JOURNAL_DIR=@JOURNAL_DIR_Q@
