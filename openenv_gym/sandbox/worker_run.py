"""The run half of the sandbox worker (:mod:`.worker`): what its forked child does, one run of untrusted code.

The child gives up its privileges (another uid when the worker runs as root, rlimits on CPU time,
memory, file size, processes and open files), runs the code as ``__main__``, then calls the
requested function on each case and writes one JSON line per case to its results pipe (fd 3: its
stdout stays the program's own). It never returns: it exits as Python would have.

Like the worker, it uses the standard library only: inside the sandbox there is no openenv_gym.
The worker's launcher (:func:`.worker.program`) loads this source first, as a module of this name.
"""

from __future__ import annotations

import base64
import builtins
import json
import linecache
import os
import resource
import signal
import sys
import traceback
from typing import Any

__all__ = ["TRACEBACK_LIMIT", "run_child"]

TRACEBACK_LIMIT = 4096  # characters of a case's traceback kept (its end: the exception is last)
_RESULT_FD = 3  # the child's results pipe: stdout stays the program's own
_CPU_TIME_GRACE = 1  # seconds of CPU time between SIGXCPU and SIGKILL
_SOLUTION = "<solution>"


def _drop_privileges(config: dict[str, Any]) -> None:
    uid = config["uid"]
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    # SIGXCPU at the CPU-time limit, SIGKILL a second later for code that ignores it: the CPU
    # time the kernel reports for a killed process can fall well short of the limit it enforced
    # (0.83 s at a 1 s limit on a loaded machine), so a kill at the limit itself would be
    # indistinguishable from any other SIGKILL.
    resource.setrlimit(resource.RLIMIT_CPU, (config["cpu_time"], config["cpu_time"] + _CPU_TIME_GRACE))
    limits = [
        (resource.RLIMIT_AS, config["memory"]),
        (resource.RLIMIT_FSIZE, config["file_size"]),
        (resource.RLIMIT_NOFILE, config["open_files"]),
        (resource.RLIMIT_CORE, 0),
    ]
    if config["isolated"]:
        # RLIMIT_NPROC counts every process of the uid, so it is only safe in a sandbox of its own.
        limits.append((resource.RLIMIT_NPROC, config["processes"]))
    for kind, value in limits:
        resource.setrlimit(kind, (value, value))


def run_child(request: dict[str, Any], config: dict[str, Any], out: int, err: int, results: int) -> None:
    """Run the code and the cases in this (forked) process; never returns."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the worker ignores it (see main)
    devnull = os.open(os.devnull, os.O_RDONLY)
    for source, target in ((devnull, 0), (out, 1), (err, 2), (results, _RESULT_FD)):
        os.dup2(source, target)
    os.closerange(_RESULT_FD + 1, 1 << 16)
    sys.stdin = open(0, encoding="utf-8", errors="replace", closefd=False)
    sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
    exit_code = 0
    try:
        # At the sandbox's memory bound the kernel kills the run's processes (they inherit this),
        # not the worker, which answers for the run and serves the next.
        with open("/proc/self/oom_score_adj", "w") as adjust:
            adjust.write("1000")
    except OSError:
        pass
    try:
        os.chdir(config["workspace"] or config["workdir"])
        _drop_privileges(config)
        exit_code = _run_solution(request)
    except SystemExit as exc:
        exit_code = _exit_status(exc.code)
    except BaseException:  # report it as Python would, then exit 1
        _print_traceback()
        exit_code = 1
    finally:
        os._exit(_flush_like_python(exit_code))


def _flush_like_python(exit_code: int) -> int:
    """Flush stdout and stderr at exit as CPython does: a failed stdout flush is reported, exit 120."""
    try:
        sys.stdout.flush()
    except BaseException as exc:  # the code closed or broke its stdout
        try:
            sys.stderr.write(f"Exception ignored on flushing sys.stdout:\n{type(exc).__name__}: {exc}\n")
        except BaseException:
            pass
        exit_code = exit_code or 120
    try:
        sys.stderr.flush()
    except BaseException:  # nothing is left to report it on
        pass
    return exit_code


def _run_solution(request: dict[str, Any]) -> int:
    source = base64.b64decode(request["code"])
    linecache.cache[_SOLUTION] = (len(source), None, source.decode("utf-8", "replace").splitlines(True), _SOLUTION)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compile(source, _SOLUTION, "exec"), namespace)  # the point of the sandbox
    except SystemExit:
        raise
    except BaseException:  # the program failed: it exits 1 and no case runs
        _print_traceback()
        return 1
    if request.get("entry_point"):
        _run_cases(namespace, request["entry_point"], request.get("cases") or [], set(request.get("tracebacks") or ()))
    return 0


def _run_cases(namespace: dict[str, Any], entry_point: str, cases: list[list[Any]], traced: set[int]) -> None:
    function = namespace.get(entry_point)
    untraced = True  # no case has raised yet: the first one to raise gets a traceback
    with open(_RESULT_FD, "w", encoding="utf-8", closefd=False) as results:
        for index, args in enumerate(cases):
            if not callable(function):
                result: dict[str, Any] = {
                    "error": f"NameError: the code defines no function named {entry_point!r}",
                    "exception": ["NameError"],
                    "missing_entry_point": True,
                }
            else:
                try:
                    value = function(*args)
                    result = {"value": json.loads(json.dumps(value))}
                except BaseException as exc:  # a failed case, including SystemExit
                    result = {
                        "error": _describe(exc)[:1000],
                        "exception": [cls.__name__ for cls in type(exc).__mro__],
                    }
                    if untraced or index in traced:
                        result["traceback"] = _case_traceback(exc)
                    untraced = False
            results.write(json.dumps(result, separators=(",", ":")) + "\n")
            results.flush()


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"
    except BaseException:
        return f"{type(exc).__name__}: <str() failed>"


def _case_traceback(exc: BaseException) -> str:
    """The traceback of a case's exception from the solution's first frame on, its last TRACEBACK_LIMIT characters."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != _SOLUTION:
        tb = tb.tb_next
    try:
        text = "".join(traceback.format_exception(type(exc), exc, tb))
    except BaseException:
        text = _describe(exc) + "\n"
    if len(text) > TRACEBACK_LIMIT:
        text = f"[... {len(text) - TRACEBACK_LIMIT} characters cut]\n" + text[-TRACEBACK_LIMIT:]
    return text


def _print_traceback() -> None:
    """Print the exception being handled as Python would, without the worker's own frames."""
    kind, value, tb = sys.exc_info()
    while tb is not None and tb.tb_frame.f_code.co_filename != _SOLUTION:
        tb = tb.tb_next
    try:
        traceback.print_exception(kind, value, tb)
    except BaseException:  # stderr closed by the code
        pass


def _exit_status(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except BaseException:
        pass
    return 1
