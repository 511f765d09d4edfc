"""The seccomp filter of bubblewrap sandboxes: the program's verdicts, then the kernel applying it on both backends.

The first tests run the BPF program through an interpreter written here (independent of the generator);
the probes run inside real sandboxes and make each refused call with arguments that an unfiltered kernel
would answer differently (success, EFAULT, EBADF ...) wherever the kernel allows that, so an EPERM comes
from the filter and not from a missing capability.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest
from hermes_env.backends import ExecutionBackend
from hermes_env.isolation import seccomp
from hypothesis import given, settings
from hypothesis import strategies as st

EPERM, ENOSYS = 1, 38
ALLOW = "allow"


def verdict(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> str | int:
    """Run a classic BPF seccomp program over one syscall: ``"allow"``, ``"kill"`` or the errno returned."""
    words = [*args, *([0] * (6 - len(args)))]
    data = struct.pack("<iIQ6Q", nr, arch, 0, *words)
    insns = [struct.unpack_from("<HBBI", program, at) for at in range(0, len(program), 8)]
    pc, acc = 0, 0
    for _ in range(len(insns)):
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
            continue
        if code == 0x06:  # ret k
            action = k & 0xFFFF0000
            if action == seccomp.RET_ALLOW:
                return ALLOW
            if action == seccomp.RET_ERRNO:
                return k & 0xFFFF
            assert k == seccomp.RET_KILL_PROCESS, hex(k)
            return "kill"
        taken = {0x15: acc == k, 0x25: acc > k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
        pc += 1 + (jt if taken else jf)
    raise AssertionError("the program ran off its end")


def nr(name: str, arch: str = "x86_64") -> int:
    number = seccomp._NUMBERS[name][seccomp.ARCHES[arch].column]
    assert number is not None
    return number


@pytest.mark.parametrize("arch", sorted(seccomp.ARCHES))
def test_every_denied_call_is_refused_and_plain_calls_allowed(arch: str) -> None:
    program = seccomp.program(arch)
    audit = seccomp.ARCHES[arch].audit
    for name in seccomp.DENIED:
        if seccomp._NUMBERS[name][seccomp.ARCHES[arch].column] is not None:
            assert verdict(program, nr(name, arch), audit) == EPERM, name
    for name in seccomp.NOT_AVAILABLE:
        assert verdict(program, nr(name, arch), audit) == ENOSYS, name
    plain = {"x86_64": (0, 1, 57, 59, 61, 231, 39), "aarch64": (63, 64, 221, 260, 94, 172)}[arch]
    for number in plain:  # read, write, fork/execve, wait4, exit_group, getpid
        assert verdict(program, number, audit) == ALLOW, number
    assert verdict(program, seccomp._LAST_KNOWN + 1, audit) == ENOSYS
    other = seccomp.AUDIT_ARCH_AARCH64 if arch == "x86_64" else seccomp.AUDIT_ARCH_X86_64
    assert verdict(program, 0, other) == "kill"
    assert verdict(program, 0, 0x40000003) == "kill"  # i386 through int 0x80


def test_x32_calls_are_refused_on_x86_64() -> None:
    program = seccomp.program("x86_64")
    assert verdict(program, seccomp.X32_SYSCALL_BIT | 39, seccomp.AUDIT_ARCH_X86_64) == ENOSYS


@settings(max_examples=300, deadline=None)
@given(flags=st.integers(0, 2**32 - 1), arch=st.sampled_from(sorted(seccomp.ARCHES)))
def test_clone_and_unshare_are_judged_by_namespace_flags(flags: int, arch: str) -> None:
    program = seccomp.program(arch)
    audit = seccomp.ARCHES[arch].audit
    clone = ALLOW if flags & seccomp.NAMESPACE_FLAGS == 0 else EPERM
    assert verdict(program, nr("clone", arch), audit, (flags,)) == clone
    unshare = ALLOW if flags & (seccomp.NAMESPACE_FLAGS | seccomp.CLONE_NEWTIME) == 0 else EPERM
    assert verdict(program, nr("unshare", arch), audit, (flags,)) == unshare


@settings(max_examples=200, deadline=None)
@given(value=st.integers(0, 2**32 - 1))
def test_personality_socket_and_ioctl_by_argument(value: int) -> None:
    program = seccomp.program("x86_64")
    audit = seccomp.AUDIT_ARCH_X86_64
    allowed = ALLOW if value in seccomp.PERSONALITIES else EPERM
    assert verdict(program, nr("personality"), audit, (value,)) == allowed
    assert verdict(program, nr("socket"), audit, (value, 1)) == (EPERM if value == seccomp.AF_VSOCK else ALLOW)
    request = EPERM if value in (seccomp.TIOCSTI, seccomp.TIOCLINUX) else ALLOW
    assert verdict(program, nr("ioctl"), audit, (0, value)) == request


@pytest.mark.parametrize(
    ("arch", "header"),
    [("x86_64", "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"), ("aarch64", "/usr/include/asm-generic/unistd.h")],
)
def test_syscall_numbers_match_the_kernel_headers(arch: str, header: str) -> None:
    path = Path(header)
    if not path.exists():
        pytest.skip(f"{header} is not installed (linux-libc-dev)")
    defined = {m[0]: int(m[1]) for m in re.findall(r"#define __NR_(\w+)\s+(\d+)\b", path.read_text())}
    checked = 0
    for name, numbers in seccomp._NUMBERS.items():
        if name in defined:
            assert numbers[seccomp.ARCHES[arch].column] == defined[name], name
            checked += 1
        else:
            assert numbers[seccomp.ARCHES[arch].column] is None or numbers[0] == numbers[1] >= 424, name
    assert checked > 50


# -- in real sandboxes ----------------------------------------------------------------------------
# Each probe: the errno the call failed with, 0 when it succeeded. x86_64 numbers (the probe test skips elsewhere).
PROBE = r"""
import ctypes, json, os, signal, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(number, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    return 0 if r >= 0 else ctypes.get_errno()
BAD = 1  # an address nobody maps: an unfiltered kernel answers EFAULT where it reads it
out = {}
out["unshare_user"] = call(272, 0x10000000)                 # unshare(CLONE_NEWUSER): succeeds unfiltered
pid = libc.syscall(ctypes.c_long(56), ctypes.c_long(0x00020000 | 17), *[ctypes.c_long(0)] * 4)  # CLONE_NEWNS|SIGCHLD
if pid == 0:
    os._exit(0)  # the child an unfiltered kernel made
out["clone_newns"] = 0 if pid > 0 else ctypes.get_errno()
out["clone3"] = call(435, BAD, 88)
out["setns"] = call(308, -1, 0)                             # EBADF unfiltered
out["keyctl"] = call(250, 9999, 0, 0, 0, 0)                 # EOPNOTSUPP unfiltered
out["add_key"] = call(248, BAD, BAD, 0, 0, 0)
out["bpf"] = call(321, 9999, BAD, 8)                        # EFAULT unfiltered (recent kernels)
out["perf_event_open"] = call(298, BAD, 0, -1, -1, 0)       # EFAULT unfiltered
out["userfaultfd"] = call(323, 1)                           # UFFD_USER_MODE_ONLY: succeeds unfiltered
out["io_uring_setup"] = call(425, 1, BAD)
out["mount"] = call(165, BAD, BAD, BAD, 0, 0)               # EFAULT unfiltered
out["umount2"] = call(166, BAD, 0xFF)                       # EINVAL unfiltered
out["init_module"] = call(175, BAD, 16, BAD)
out["kexec_load"] = call(246, 0, 0, BAD, 0)
out["personality_exec"] = call(135, 0x0400000)              # READ_IMPLIES_EXEC: succeeds unfiltered
out["personality_query"] = call(135, 0xFFFFFFFF)
out["vsock"] = call(41, 40, 1, 0)
out["x32_getpid"] = call(0x40000000 | 39)
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
out["ptrace_attach"] = call(101, 16, child, 0, 0)           # PTRACE_ATTACH to our own child: allowed unfiltered
out["process_vm_readv"] = call(310, child, BAD, 1, BAD, 1, 0)
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
print(json.dumps(out))
"""

REFUSED_WITH = {name: EPERM for name in (
    "unshare_user", "clone_newns", "setns", "keyctl", "add_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "mount", "umount2", "init_module", "kexec_load", "personality_exec", "vsock",
    "ptrace_attach", "process_vm_readv",
)} | {"clone3": ENOSYS, "x32_getpid": ENOSYS, "personality_query": 0}  # fmt: skip


@pytest.fixture
def x86_64() -> None:
    if seccomp.machine_arch().name != "x86_64":
        pytest.skip("the probe script uses x86_64 syscall numbers")


@pytest.mark.usefixtures("x86_64")
async def test_denied_calls_are_refused_inside_the_sandbox(sandboxed: ExecutionBackend) -> None:
    await sandboxed.write_file("t", "probe.py", PROBE.encode())
    result = await sandboxed.execute("t", "python3 probe.py", 30)
    assert result.exit_code == 0, result
    assert json.loads(result.output.strip().splitlines()[-1]) == REFUSED_WITH
    status = await sandboxed.execute("t", "grep ^Seccomp: /proc/self/status; unshare -Ur id", 20)
    assert re.search(r"^Seccomp:\s+2$", status.output, re.M), status.output
    assert "uid=0" not in status.output and "Operation not permitted" in status.output


async def test_the_tools_work_under_the_filter(sandboxed: ExecutionBackend) -> None:
    script = (
        "set -e\n"
        "sleep 0.2 & wait $!\n"  # a background job
        "python3 -c 'import subprocess, threading, os\n"
        "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
        "pid = os.fork()\n"
        "os._exit(0) if pid == 0 else os.waitpid(pid, 0)\n"
        'print(subprocess.run(["echo", "spawned"], capture_output=True, text=True).stdout.strip())\'\n'
        "git init -q repo && cd repo && echo hi > f && git add f\n"
        "git -c user.name=t -c user.email=t@t commit -qm one && git log --oneline | wc -l\n"
    )
    result = await sandboxed.execute("t", script, 30)
    assert result.exit_code == 0, result
    assert result.output.split() == ["spawned", "1"]
