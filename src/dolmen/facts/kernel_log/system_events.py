"""Kernel-log events of the host itself: panics, Oopses and BUGs, OOM kills, segfaults,
the file-max limit.

Each pattern names the kernel code that prints it. These lines are the kernel's own:
a syslog also holds every program's lines, so a record another program logged
("myapp: BUG: ...") is not read as the kernel's (``program`` is None or "kernel").
"""

from __future__ import annotations

from dolmen.facts.kernel_log.lazy import Lazy

# kernel/panic.c panic(): "Kernel panic - not syncing: Fatal exception" (the reason after the
# colon); some vendor kernels capitalise it ("Kernel Panic"), as GPUd's os matcher allows.
_PANIC = Lazy(r"Kernel [Pp]anic - not syncing:? ?(.*)")
# arch/x86/kernel/dumpstack.c __die(): "Oops: 0002 [#1] SMP" (older) or "Oops: general
# protection fault, probably for non-canonical address ... [#1] PREEMPT SMP NOPTI" (5.x+).
_OOPS = Lazy(r"\bOops: (.*)")
# BUG()/page-fault/lockup reports: "BUG: unable to handle kernel NULL pointer dereference",
# "BUG: kernel NULL pointer dereference, address: ...", "kernel BUG at mm/slub.c:321!",
# "watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [python:1234]".
_BUG = Lazy(r"(?:^|: |\s)(?:kernel )?BUG(?:: | at )(.*)")
# mm/oom_kill.c __oom_kill_process(): "Out of memory: Killed process 1234 (python) total-vm:...",
# before 4.19 "Out of memory: Kill process 456 (python) score 50 or sacrifice child", RHEL's
# "Killed process 123, UID 48, (httpd)"; a cgroup's own limit: "Memory cgroup out of memory:".
_OOM_KILLED = Lazy(r"(Memory cgroup out of memory|Out of memory): Kill(?:ed)? process (\d+),? ")
_OOM_NAME = Lazy(r"\(([^)]*)\)")
# mm/oom_kill.c dump_oom_summary() (5.0+): "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),
# cpuset=...,mems_allowed=0-1,oom_memcg=...,task_memcg=...,task=node,pid=863987,uid=0".
_OOM_SUMMARY = Lazy(r"oom-kill:constraint=([A-Z_]*)")
_OOM_TASK = Lazy(r",task=([^,]*),pid=(\d+)")
# arch/x86/mm/fault.c show_signal_msg(): "python[2536443]: segfault at 7f797fe00000 ip ... sp ...
# error 4 in libnccl.so.2[7f7c7ac00000+d3d3000]"; arch/x86/kernel/traps.c: "traps: python[123]
# general protection fault ip:... sp:... error:0 in libcuda.so.1[...]".
_SEGV = Lazy(r"(?:traps: )?([^\s\[]+)\[(\d+)\]:? (segfault|general protection fault)")
_SEGV_LIB = Lazy(r" in ([^\s\[]+)\[")
# fs/file_table.c alloc_empty_file(): "VFS: file-max limit 1048576 reached".
_FILE_MAX = Lazy(r"VFS: file-max limit (\d+) reached")

# Words one of these events' lines contains (the scanner's prefilter, see events.NEEDLES),
# and plain strings that cover them (events.BLOCK_WORDS).
WORDS = (
    r"anic - not|Oops: |BUG[: ]|Killed process|Kill process|oom-kill:|segfault at"
    r"|protection fault|file-max"
)
SYSTEM_WORDS = (
    "anic - not", "Oops: ", "BUG", "Kill", "oom-kill:", "segfault at", "protection fault",
    "file-max",
)  # fmt: skip


def system_event(message: str, program: str | None) -> dict[str, object] | None:
    """The event of a host-level kernel line, or None."""
    if program not in (None, "kernel"):
        return None
    m = message
    if "anic" in m and (found := _PANIC.search(m)):
        return {"kind": "panic", "detail": found[1].strip() or None}
    if "Oops: " in m and (found := _OOPS.search(m)):
        return {"kind": "oops", "detail": f"Oops: {found[1].strip()}"}
    if "BUG" in m and (found := _BUG.search(m)):
        return {"kind": "oops", "detail": f"BUG: {found[1].strip()}"}
    if "ill" in m and (found := _OOM_KILLED.search(m)):
        name = _OOM_NAME.search(m[found.end() - 1 :])
        scope = "memcg" if found[1].startswith("Memory cgroup") else "system"
        return {
            "kind": "oom_kill",
            "pid": int(found[2]),
            "process": name[1] if name else None,
            "detail": scope,
        }
    if "oom-kill:" in m and (found := _OOM_SUMMARY.search(m)):
        task = _OOM_TASK.search(m)
        constraint = found[1] or None
        return {
            "kind": "oom_kill",
            "pid": int(task[2]) if task else None,
            "process": task[1] if task else None,
            "detail": "memcg" if constraint == "CONSTRAINT_MEMCG" else "system",
            "device": constraint,
        }
    if ("segfault" in m or "protection fault" in m) and (found := _SEGV.search(m)):
        lib = _SEGV_LIB.search(m)
        return {
            "kind": "segfault",
            "process": found[1],
            "pid": int(found[2]),
            "device": lib[1] if lib else None,  # the library or program it crashed in
            "detail": found[3],
        }
    if "file-max" in m and (found := _FILE_MAX.search(m)):
        return {"kind": "file_max", "detail": found[1]}
    return None
