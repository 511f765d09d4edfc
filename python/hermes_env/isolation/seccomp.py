"""The seccomp filter every bubblewrap sandbox runs under: a classic BPF program built here, handed to bwrap.

A sandbox already has no capabilities, but a process without capabilities can still reach much of
the kernel: a nested user namespace (``unshare -Ur``) hands it capabilities over new namespaces and
with them ``mount``, filesystem drivers and netfilter; ``keyctl``, ``bpf``, ``perf_event_open``,
``userfaultfd`` and ``io_uring`` are what most published container escapes start from. The filter
refuses, at least, everything Docker's default profile refuses to a container without added
capabilities, and a little more (``io_uring``, ``AF_VSOCK`` sockets that reach the VM's host, terminal
keystroke injection).

How a call is judged (:func:`program`):
- another architecture (32-bit x86 through ``int 0x80``, x32): the process is killed or the call
  fails with ENOSYS; the syscall numbers below are only meaningful for the native one;
- a number above the newest syscall this table knows (:data:`_LAST_KNOWN`): ENOSYS, so a syscall
  added by a later kernel is refused until someone judged it, and programs fall back as on an old kernel;
- :data:`DENIED`: EPERM, as Docker answers;
- :data:`NOT_AVAILABLE`: ENOSYS, so the C library falls back to a call that can be checked;
- :data:`CHECKED`: allowed or refused by their arguments (namespace flags, personality, socket family,
  ioctl request);
- everything else is allowed (the kernel caches that verdict per syscall, so plain calls cost nothing).

What the tools need, and therefore stays allowed:
- ``clone`` without namespace flags: fork, vfork, ``posix_spawn``, threads (bash, python3, git, tmux);
- ``unshare`` without namespace flags (``CLONE_FILES``/``CLONE_FS``, used by some runtimes);
- ``personality`` queries and ``ADDR_NO_RANDOMIZE`` (``setarch -R``), as in Docker's profile;
- sockets of every family but ``AF_VSOCK`` (Unix sockets for tmux's server; the network namespace
  has no route out unless the policy allows the network);
- ``ioctl`` except ``TIOCSTI``/``TIOCLINUX`` (terminal programs under tmux);
- ``prctl``, ``seccomp`` (a program may add filters of its own), ``setsid``, ``kill`` (the sandbox's
  own PID namespace), ``memfd_create``, ``landlock_*``;
- nothing that needs a capability: the sandbox has none, so ``chroot``, ``mknod`` and the like fail anyway.
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import struct
from collections.abc import Iterator
from dataclasses import dataclass

# -- constants (linux/audit.h, linux/seccomp.h, linux/filter.h, linux/sched.h) ---------------------
AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000

RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
EPERM = 1
ENOSYS = 38

# Offsets into struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
# Arguments are read as their low 32 bits (little-endian); every argument checked here is an int
# or a flags word the kernel reads as 32 bits.
_NR, _ARCH = 0, 4


def _arg(index: int) -> int:
    return 16 + 8 * index


# Classic BPF opcodes.
_LD_W_ABS = 0x20
_JEQ_K, _JGT_K, _JGE_K, _JSET_K = 0x15, 0x25, 0x35, 0x45
_RET_K = 0x06

CLONE_NEWTIME = 0x00000080  # unshare/clone3 only: in clone's flags these bits are the exit signal
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACE_FLAGS = (
    CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
)

AF_VSOCK = 40
TIOCSTI = 0x5412  # push a character into a terminal's input: keystrokes typed "for" whoever reads it
TIOCLINUX = 0x541C  # includes pasting the console selection
# personality(2) values Docker allows: PER_LINUX, UNAME26, ADDR_NO_RANDOMIZE, both, and the query.
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)

# -- syscall numbers: name -> (x86_64, aarch64); None where the architecture has no such call ------
# 424 and up are numbered alike on every architecture.
_NUMBERS: dict[str, tuple[int | None, int | None]] = {
    # namespaces
    "setns": (308, 268),
    "clone": (56, 220),
    "clone3": (435, 435),
    "unshare": (272, 97),
    # kernel keyring
    "add_key": (248, 217),
    "keyctl": (250, 219),
    "request_key": (249, 218),
    # large unprivileged kernel surfaces
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "fanotify_init": (300, 262),
    # other processes' memory and files
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kcmp": (312, 272),
    "pidfd_getfd": (438, 438),
    "process_madvise": (440, 440),
    "process_mrelease": (448, 448),
    # mounts
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "statmount": (457, 457),
    "listmount": (458, 458),
    "open_tree_attr": (467, 467),
    # kernel modules, kexec, power
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "create_module": (174, None),
    "get_kernel_syms": (177, None),
    "query_module": (178, None),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "reboot": (169, 142),
    # system administration
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "lookup_dcookie": (212, 18),
    "nfsservctl": (180, 42),
    "syslog": (103, 116),
    "vhangup": (153, 58),
    "_sysctl": (156, None),
    "uselib": (134, None),
    "sethostname": (170, 161),
    "setdomainname": (171, 162),
    "iopl": (172, None),
    "ioperm": (173, None),
    "lsm_set_self_attr": (460, 460),
    # file handles (open_by_handle_at opens any file of a mounted filesystem: the "shocker" escape)
    "name_to_handle_at": (303, 264),
    "open_by_handle_at": (304, 265),
    # clocks
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "clock_adjtime": (305, 266),
    "adjtimex": (159, 171),
    # NUMA placement (Docker: CAP_SYS_NICE only)
    "mbind": (237, 235),
    "set_mempolicy": (238, 237),
    "get_mempolicy": (239, 236),
    "migrate_pages": (256, 238),
    "move_pages": (279, 239),
    "set_mempolicy_home_node": (450, 450),
    # checked by argument
    "personality": (135, 92),
    "socket": (41, 198),
    "ioctl": (16, 29),
}
_LAST_KNOWN = 469  # file_setattr (Linux 6.17); anything above is a syscall nobody here has judged

DENIED = tuple(
    name
    for name in _NUMBERS
    if name not in ("clone", "clone3", "unshare", "personality", "socket", "ioctl", "statmount", "listmount")
)
NOT_AVAILABLE = ("clone3", "statmount", "listmount")  # clone3's flags live in memory BPF cannot read
CHECKED = ("clone", "unshare", "personality", "socket", "ioctl")


@dataclass(frozen=True)
class Arch:
    name: str
    audit: int
    column: int  # index into _NUMBERS' tuples


ARCHES = {"x86_64": Arch("x86_64", AUDIT_ARCH_X86_64, 0), "aarch64": Arch("aarch64", AUDIT_ARCH_AARCH64, 1)}


class _Assembler:
    """Classic BPF with symbolic jump targets (jumps go forward only, at most 255 instructions)."""

    def __init__(self) -> None:
        self.code: list[tuple[int, int | str, int | str, int]] = []
        self.labels: dict[str, int] = {}

    def load(self, offset: int) -> None:
        self.code.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, true: int | str, false: int | str = 0) -> None:
        self.code.append((op, true, false, k))

    def ret(self, value: int) -> None:
        self.code.append((_RET_K, 0, 0, value))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assemble(self) -> bytes:
        out = bytearray()
        for at, (op, jt, jf, k) in enumerate(self.code):
            offsets = []
            for target in (jt, jf):
                offset = target if isinstance(target, int) else self.labels[target] - at - 1
                if not 0 <= offset <= 255:
                    raise ValueError(f"seccomp program: jump from {at} to {target!r} is out of range ({offset})")
                offsets.append(offset)
            out += struct.pack("<HBBI", op, offsets[0], offsets[1], k & 0xFFFFFFFF)
        return bytes(out)


def _numbers(arch: Arch, names: tuple[str, ...]) -> list[int]:
    return sorted(n for n in (_NUMBERS[name][arch.column] for name in names) if n is not None)


def _build(arch: Arch) -> bytes:
    a = _Assembler()
    a.load(_ARCH)
    a.jump(_JEQ_K, arch.audit, 0, "kill")
    a.load(_NR)
    if arch.name == "x86_64":
        a.jump(_JGE_K, X32_SYSCALL_BIT, "enosys")
    a.jump(_JGT_K, _LAST_KNOWN, "enosys")
    for nr in _numbers(arch, DENIED):
        a.jump(_JEQ_K, nr, "eperm")
    for nr in _numbers(arch, NOT_AVAILABLE):
        a.jump(_JEQ_K, nr, "enosys")
    for name in CHECKED:
        nr = _NUMBERS[name][arch.column]
        assert nr is not None
        a.jump(_JEQ_K, nr, name)
    a.ret(RET_ALLOW)

    a.label("clone")  # fork and threads yes, new namespaces no
    a.load(_arg(0))
    a.jump(_JSET_K, NAMESPACE_FLAGS, "eperm", "allow")
    a.label("unshare")
    a.load(_arg(0))
    a.jump(_JSET_K, NAMESPACE_FLAGS | CLONE_NEWTIME, "eperm", "allow")
    a.label("personality")
    a.load(_arg(0))
    for value in PERSONALITIES:
        a.jump(_JEQ_K, value, "allow")
    a.ret(RET_ERRNO | EPERM)
    a.label("socket")
    a.load(_arg(0))
    a.jump(_JEQ_K, AF_VSOCK, "eperm", "allow")
    a.label("ioctl")
    a.load(_arg(1))
    a.jump(_JEQ_K, TIOCSTI, "eperm")
    a.jump(_JEQ_K, TIOCLINUX, "eperm", "allow")

    a.label("allow")
    a.ret(RET_ALLOW)
    a.label("eperm")
    a.ret(RET_ERRNO | EPERM)
    a.label("enosys")
    a.ret(RET_ERRNO | ENOSYS)
    a.label("kill")
    a.ret(RET_KILL_PROCESS)
    return a.assemble()


def machine_arch() -> Arch:
    """This machine's architecture; RuntimeError where the filter has no syscall table for it."""
    machine = platform.machine()
    arch = ARCHES.get(machine)
    if arch is None:
        raise RuntimeError(
            f"no seccomp syscall table for the {machine!r} architecture (only {', '.join(ARCHES)}); "
            "bubblewrap sandboxes cannot be filtered here"
        )
    return arch


# program_fd writes the program into a pipe before anyone reads it: it must fit the smallest pipe buffer.
_MAX_PROGRAM_BYTES = 4096


@functools.lru_cache(maxsize=len(ARCHES))
def program(arch_name: str | None = None) -> bytes:
    """The filter for ``arch_name`` (default: this machine's) as bwrap reads it: ``struct sock_filter``s."""
    data = _build(ARCHES[arch_name] if arch_name is not None else machine_arch())
    if len(data) > _MAX_PROGRAM_BYTES:
        raise ValueError(f"seccomp program of {len(data)} bytes exceeds {_MAX_PROGRAM_BYTES} (one pipe page)")
    return data


@contextlib.contextmanager
def program_fd() -> Iterator[int]:
    """A fresh read end of a pipe holding :func:`program`, for one bwrap (``--seccomp FD``) to read to its end.

    One per process: bwrap reads the fd to EOF, so a shared file offset would leave the next reader nothing.
    """
    data = program()
    read_fd, write_fd = os.pipe()
    try:
        with os.fdopen(write_fd, "wb", closefd=True) as w:
            w.write(data)
        yield read_fd
    finally:
        os.close(read_fd)
