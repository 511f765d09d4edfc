"""The POSIX-sh programs the docker backend runs inside a container (any image with ``/bin/sh`` and coreutils or
busybox: ``readlink -f``, ``head -c``, ``find -print0``, ``mkfifo``; ``timeout`` when present).

``FILE_OP`` reads, writes and lists workspace files, refusing paths whose real path leaves the workspace.
``CHANNEL_LOOP`` is a rollout container's main process: it serves calls sent over FIFOs in the bind-mounted
control directory (:mod:`hermes_env.containers.channel`), so a call costs no engine command. ``EXEC_WRAPPER`` runs
one command per ``<engine> exec`` where no control directory can be shared (a remote engine).

In both, a command runs as ``timeout -s KILL <seconds> bash -c <command>`` in the background: ``timeout`` makes
itself a process-group leader, so when the call returns (finished or killed) the whole group is killed, and
what the command left running ends with the call, as on the other backends.
"""

from __future__ import annotations

# Exit codes of file_op, mapped to exceptions by the backend.
FILE_MISSING, FILE_OUTSIDE, FILE_IS_DIR, FILE_NOT_REGULAR, FILE_BAD_PARENT = 91, 92, 93, 95, 96

#: ``file_op OP WORKSPACE PATH LIMIT``: read (the first LIMIT bytes to stdout), write (stdin to the file, parents
#: made), list (the base's real path, then the regular files under PATH, NUL-separated). PATH is relative to the
#: workspace, or absolute: then it may be anywhere in the container (the container is the task's sandbox).
FILE_OP = r"""
file_op() {
    op=$1; p=$3
    case "$p" in /*) base=/; p=${p#/};; *) base=$2;; esac
    W=$(readlink -f -- "$base") || exit 90
    inside() { [ "$W" = / ] && return 0; case "$1" in "$W"|"$W"/*) return 0;; *) return 1;; esac; }
    # exit 96 when the deepest existing ancestor of $1 is not a directory (a path through a file)
    bad_parent() {
        e=${1%/*}
        while [ ! -e "$e" ] && [ ! -L "$e" ]; do e=${e%/*}; done
        [ -d "$e" ] || exit 96
    }
    case "$op" in
    read)
        [ -e "$W/$p" ] || { bad_parent "$W/$p"; exit 91; }
        r=$(readlink -f -- "$W/$p") && inside "$r" || exit 92
        [ -d "$r" ] && exit 93
        [ -f "$r" ] || exit 95
        exec head -c "$4" -- "$r" ;;
    write)
        t=$W/$p; d=${t%/*}; e=$d
        while [ ! -e "$e" ] && [ ! -L "$e" ]; do e=${e%/*}; done
        re=$(readlink -f -- "$e") && inside "$re" || exit 92
        [ -d "$re" ] || exit 96
        mkdir -p -- "$d" 2>/dev/null || exit 96
        if [ -L "$t" ]; then rt=$(readlink -f -- "$t") && inside "$rt" || exit 92; fi
        [ -d "$t" ] && exit 93
        exec cat > "$t" ;;
    list)
        [ -e "$W/$p" ] || exit 91
        r=$(readlink -f -- "$W/$p") && inside "$r" || exit 92
        printf '%s\0' "$W"
        exec find "$r" -type f -print0 ;;
    esac
    exit 97
}
"""

#: ``sh -c EXEC_WRAPPER hermes_env WORKSPACE SECONDS COMMAND``; exits 125 (the engines' "could not run") when the
#: workspace cannot be entered.
EXEC_WRAPPER = r"""
cd "$1" 2>/dev/null || { mkdir -p -- "$1" && cd "$1"; } || { echo "hermes_env: cannot enter $1" >&2; exit 125; }
if [ -x /bin/bash ]; then sh=/bin/bash; else sh=/bin/sh; fi
if command -v timeout >/dev/null 2>&1; then
    exec 3<&0
    timeout -s KILL "$2" "$sh" -c "$3" <&3 3<&- &
    pid=$!
    wait "$pid"; rc=$?
    kill -9 -"$pid" 2>/dev/null
    exit "$rc"
fi
exec "$sh" -c "$3"
"""

#: The container's main process: ``sh loop.sh WORKSPACE MAX_OUTPUT FLOOD_LIMIT MAX_FILE``. Requests are lines
#: ``OP ID ARG`` on the FIFO ``req``; a call's other inputs are files ``ID.*`` the host wrote beforehand. Its answer
#: is the line ``EXIT_CODE [OOM_KILLS]`` (the count only after a command died of a signal), written to the FIFO
#: ``ID.done`` once its output files are complete. ``alive`` stays open for writing while this loop lives: the host
#: sees the container die as end-of-file there, at once, without asking the engine.
CHANNEL_LOOP = (
    FILE_OP
    + r"""
C=/.hermes_env; W=$1; max=$2; flood=$3; max_file=$4
exec 3<>"$C/req" 4>"$C/alive" || exit 1
mkdir -p -- "$W"
if [ -x /bin/bash ]; then sh=/bin/bash; else sh=/bin/sh; fi
if command -v timeout >/dev/null 2>&1; then limit="timeout -s KILL"; else limit=; fi
oom() {
    sed -n 's/^oom_kill //p' /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null |
        head -n 1
}
run() {
    f=$C/$1
    cd "$W" 2>/dev/null || { mkdir -p -- "$W" && cd "$W"; } || { echo 125 > "$f.done"; return; }
    if [ -e "$f.in" ]; then in=$f.in; else in=/dev/null; fi
    mkfifo "$f.pipe" || { echo 125 > "$f.done"; return; }
    # The first MAX_OUTPUT bytes are kept; the rest is counted, and past FLOOD_LIMIT the command gets SIGPIPE.
    { head -c "$max" > "$f.out"; head -c "$flood" | wc -c > "$f.more"; } < "$f.pipe" &
    reader=$!
    $limit ${limit:+"$2"} "$sh" -c "$(cat "$f.cmd")" < "$in" > "$f.pipe" 2>&1 &
    pid=$!
    echo "$pid" > "$f.pid"
    wait "$pid"; rc=$?
    kill -9 -"$pid" 2>/dev/null
    wait "$reader"
    if [ "$rc" -ge 128 ]; then echo "$rc $(oom)"; else echo "$rc"; fi > "$f.done"
}
fileop() {
    f=$C/$2
    if [ "$1" = write ]; then
        (file_op write "$W" "$(cat "$f.path")" "$max_file") < "$f.data" > /dev/null
    else
        (file_op "$1" "$W" "$(cat "$f.path")" "$max_file") > "$f.out"
    fi
    echo "$?" > "$f.done"
}
echo ready >&4
while read -r op id arg <&3; do
    case $op in
    run) run "$id" "$arg" 3<&- 4>&- & ;;
    read|write|list) fileop "$op" "$id" 3<&- 4>&- & ;;
    kill) p=$(cat "$C/$id.pid" 2>/dev/null) && { kill -9 -"$p" || kill -9 "$p"; } 2>/dev/null ;;
    esac
done
"""
)

#: Prints the container's out-of-memory kill count (cgroup v2, then v1).
OOM_PROBE = "sed -n 's/^oom_kill //p' /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control"
