"""Chaos for a vector env's rollout: its servers killed, frozen and cut off at random, every fault accounted for.

:class:`Chaos` watches a :class:`~openenv_gym.vector.RemoteVectorEnv` rollout that runs in the
caller's thread. Its injector thread waits for the steps it drew at random and, at a random
moment of each (before, during or after the step's frames go out), picks a server none of whose
sub-envs awaits a report and does one of:

- ``kill``: SIGKILL of the server process, or ``docker kill`` of its container;
- ``freeze``: SIGSTOP of the server (a container's server is its PID 1): the server's kernel
  still holds its connections open, so only the client's call timeout can tell;
- ``cut``: one block's connection shut down under the client, as a reset connection ends it
  (the server lives on and sees the connection close).

After every step the rollout hands the results to :meth:`Chaos.observe`, which matches each
``info["remote_failure"]`` to the fault waiting for it: the fault's sub-envs exactly, each once,
truncated, in one step; a report no fault waits for is a problem, and so is a fault never
reported. :func:`census` counts what could leak (server processes, zombies, containers, entries
of the temp dir). Used by ``tests/vector/test_chaos.py`` and ``benchmarks/chaos.py``.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random
import signal
import socket
import statistics
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from openenv_gym.vector.remote_vector_env import FAILURE_INFO_KEY

__all__ = ["KINDS", "Chaos", "Fault", "census", "own_children", "rollout"]

KINDS = ("kill", "freeze", "cut")
# What a fault's report names: a frozen server is only ever a timeout.
_EXPECTED_ERRORS = {
    "kill": ("ConnectionLostError", "RequestTimeoutError"),
    "freeze": ("RequestTimeoutError",),
    "cut": ("ConnectionLostError",),
}


@dataclasses.dataclass
class Fault:
    """One injected fault and what became of it."""

    kind: str
    step: int  # the rollout step it was injected during (or just after)
    server: str  # the address the victim's clients connect to
    sub_envs: frozenset[int]
    victim: int | str | None  # the server's pid or container id; None for a cut
    injected: float  # time.monotonic()
    blocks: int = 1  # the sessions it hit (a server with plain sessions holds one per sub-env)
    reported: dict[int, int] = dataclasses.field(default_factory=dict)  # sub-env -> the step that reported it
    reasons: set[str] = dataclasses.field(default_factory=set)  # the error types named in the reports
    recovered: float | None = None  # when the step that reported its last sub-env returned

    @property
    def done(self) -> bool:
        return set(self.reported) == self.sub_envs

    @property
    def recovery(self) -> float | None:
        """Seconds from the injection to the return of the step that reported it."""
        return None if self.recovered is None else self.recovered - self.injected


def _address(url: str | None) -> str | None:
    """A server's address as its clients' URLs hold it (``host:port``, or a quoted socket path)."""
    return urllib.parse.urlsplit(url).netloc if url else None


def _session_socket(client: Any) -> socket.socket | None:
    inner = getattr(client, "client", client)  # a plain session's batch wraps one EnvClient
    return inner.connection._sock


def _state(pid: int) -> str | None:
    """The process state letter of ``pid`` (``R``, ``S``, ``T``, ``Z``...), or None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def own_children() -> dict[int, str]:
    """This process's children: pid -> state letter, read from ``/proc``."""
    found = {}
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me:
            found[int(entry.name)] = fields[0]
    return found


def census(docker: Any = None, temp_dir: str | None = None) -> dict[str, int]:
    """What a rollout could leak, counted: live children of this process, zombie children, containers
    labelled with this process as their owner, and entries of ``temp_dir`` (default: the temp dir)."""
    children = own_children()
    counts = {
        "processes": sum(state != "Z" for state in children.values()),
        "zombies": sum(state == "Z" for state in children.values()),
        "temp_entries": len(os.listdir(temp_dir or tempfile.gettempdir())),
    }
    if docker is not None:
        from openenv_gym.providers.docker.owners import OWNER_PID

        counts["containers"] = len(docker.containers.list(all=True, filters={"label": f"{OWNER_PID}={os.getpid()}"}))
    return counts


class Chaos:
    """Faults injected at random into a vector env's rollout, and the check that each was reported once.

    Args:
        envs: the vector env (a ``gym.make_vec`` result or a ``RemoteVectorEnv``); its servers
            are the process or Docker provider's.
        faults: how many faults to inject.
        steps: the rollout's length; the faults fall on random steps between ``warmup`` and
            ``steps - tail`` (a step where no server is healthy passes the fault on to the next).
        kinds: the fault kinds to draw from.
        seed: seeds the draws (which steps, which servers, which kinds, when within a step).
        docker: a docker SDK client, for an env on the Docker provider.
        other_children: live children of this process that are not the env's servers (the
            census's ``processes`` before the env was made: a test suite's fixtures' servers).
        jitter: most injections land up to this many seconds after their step starts; one in
            five (when the rollout has room left) up to 0.25 s later, as another block may be
            recovering or a later step has begun.
    """

    def __init__(
        self,
        envs: Any,
        *,
        faults: int,
        steps: int,
        kinds: Iterable[str] = KINDS,
        seed: int = 0,
        docker: Any = None,
        warmup: int = 5,
        tail: int = 20,
        jitter: float = 0.003,
        other_children: int = 0,
    ) -> None:
        self.envs = envs.unwrapped
        self.other_children = other_children
        self.kinds = tuple(kinds)
        unknown = set(self.kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; choose from {KINDS}")
        if steps - tail - warmup < faults:
            raise ValueError(f"{faults} faults do not fit in steps {warmup}-{steps - tail}")
        self.rng = random.Random(seed)
        self.schedule = sorted(self.rng.sample(range(warmup, steps - tail), faults))
        self.steps, self.tail = steps, tail
        self.docker = docker
        self.jitter = jitter
        self.faults: list[Fault] = []
        self.problems: list[str] = []
        self.pending: dict[int, Fault] = {}  # sub-env -> the fault whose report it awaits
        self.reset_due: set[int] = set()  # NextStep: sub-envs whose next step must be a reset
        self.started = self.finished = 0.0
        self._lock = threading.Lock()
        self._step = -1
        self._step_changed = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="chaos-injector", daemon=True)

    # The rollout's side ------------------------------------------------------------------------

    def __enter__(self) -> Chaos:
        self.started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop injecting, and wake any server left frozen (a failed rollout may leave one)."""
        with self._step_changed:
            self._stop = True
            self._step_changed.notify_all()
        self._thread.join(30)
        self.finished = self.finished or time.monotonic()
        with self._lock:
            for fault in self.faults:
                if fault.kind == "freeze" and not fault.done:
                    self._signal(fault.victim, signal.SIGCONT)

    def begin_step(self, step: int) -> None:
        """Say that step ``step`` of the rollout starts now."""
        with self._step_changed:
            self._step = step
            self._step_changed.notify_all()

    def observe(self, step: int, result: tuple[Any, ...]) -> None:
        """Match the ``remote_failure`` reports of step ``step``'s ``result`` to the faults awaiting them."""
        now = time.monotonic()
        _, rewards, terminations, truncations, infos = result
        mask = infos.get(f"_{FAILURE_INFO_KEY}")
        reported = [int(i) for i in np.flatnonzero(mask)] if mask is not None else []
        same_step = self.envs.autoreset_mode.value == "SameStep"
        with self._lock:
            for index in sorted(self.reset_due - set(reported)):  # NextStep: the step after a loss is a reset
                if rewards[index] != 0.0 or terminations[index] or truncations[index]:
                    self.problems.append(f"step {step}: sub-env {index} did not reset after its loss")
            self.reset_due.clear()
            completed = []
            for index in reported:
                reason = str(infos[FAILURE_INFO_KEY][index])
                fault = self.pending.pop(index, None)
                if fault is None:
                    self.problems.append(f"step {step}: sub-env {index} reported {reason!r}, but no fault awaits it")
                    continue
                fault.reported[index] = step
                fault.reasons.add(reason.split(":", 1)[0])
                if not truncations[index] or terminations[index] or rewards[index] != 0.0:
                    self.problems.append(f"step {step}: sub-env {index} lost but not truncated with no reward")
                if same_step and not infos["_final_obs"][index]:
                    self.problems.append(f"step {step}: sub-env {index} lost under SameStep without a final_obs")
                if not same_step:
                    self.reset_due.add(index)
                if fault.done:
                    completed.append(fault)
            for fault in completed:
                fault.recovered = now
                self._check_recovered(fault)

    def check(self) -> list[str]:
        """Every problem seen: unexpected or repeated reports, faults never reported, leaks while running."""
        problems = list(self.problems)
        for fault in self.faults:
            if not fault.done:
                missing = sorted(fault.sub_envs - set(fault.reported))
                problems.append(f"{fault.kind} at step {fault.step} never reported on sub-envs {missing}")
        if len(self.faults) != len(self.schedule):
            problems.append(f"{len(self.faults)} faults injected of {len(self.schedule)} scheduled")
        return problems

    def figures(self, steps_done: int) -> dict[str, Any]:
        """Faults per minute, the median recovery of each kind, and the steps done."""
        minutes = ((self.finished or time.monotonic()) - self.started) / 60
        recoveries: dict[str, list[float]] = {}
        for fault in self.faults:
            if fault.recovery is not None:
                recoveries.setdefault(fault.kind, []).append(fault.recovery)
        return {
            "faults": len(self.faults),
            "reported": sum(fault.done for fault in self.faults),
            "faults_per_min": len(self.faults) / minutes if minutes else 0.0,
            "median_recovery_s": {kind: statistics.median(times) for kind, times in sorted(recoveries.items())},
            "by_kind": {kind: len(times) for kind, times in sorted(recoveries.items())},
            "reported_as": dict(sorted(collections.Counter(r for fault in self.faults for r in fault.reasons).items())),
            "steps": steps_done,
            "seconds": minutes * 60,
        }

    # The injector's side -----------------------------------------------------------------------

    def _run(self) -> None:
        for scheduled in self.schedule:
            step = scheduled
            while True:
                with self._step_changed:
                    while self._step < step and not self._stop:
                        self._step_changed.wait(1.0)
                    if self._stop:
                        return
                    step = self._step
                if step >= self.steps - 3:  # too late to be reported within the rollout
                    return
                # Mostly within the step's own frames; now and then later, when another block may be
                # recovering (the step then goes on, or the next one has begun).
                late = self.rng.random() < 0.2 and step + 300 < self.steps - self.tail
                time.sleep(self.rng.uniform(0, 0.25 if late else self.jitter))
                if self._inject(step):
                    break
                step += 1  # no healthy server now: try at the next step

    def _healthy_servers(self) -> dict[str, tuple[Any, list[Any]]]:
        """Address -> (its provider, its blocks), for servers none of whose sub-envs awaits a report."""
        by_address: dict[str, list[Any]] = {}
        for block in self.envs._blocks:
            address = _address(block.client.url)
            if address is not None:
                by_address.setdefault(address, []).append(block)
        providers = {
            _address(getattr(p, "base_url", None) or getattr(p, "_url", None)): p for p in self.envs._providers
        }
        healthy = {}
        for address, blocks in by_address.items():
            provider = providers.get(address)
            waiting = any(index in self.pending for block in blocks for index in range(block.start, block.stop))
            if provider is not None and not waiting and all(_session_socket(block.client) for block in blocks):
                healthy[address] = (provider, blocks)
        return healthy

    def _inject(self, step: int) -> bool:
        with self._lock:
            if self._step >= self.steps - 3:
                return False  # too late to be reported within the rollout
            healthy = self._healthy_servers()
            if not healthy:
                return False
            address = self.rng.choice(sorted(healthy))
            provider, blocks = healthy[address]
            kind = self.rng.choice(self.kinds)
            if kind == "cut":
                blocks = [self.rng.choice(blocks)]
            victim = None if kind == "cut" else (provider.pid if self.docker is None else provider.container_id)
            sub_envs = frozenset(index for block in blocks for index in range(block.start, block.stop))
            fault = Fault(kind, step, address, sub_envs, victim, time.monotonic(), len(blocks))
            if kind == "cut":
                sock = _session_socket(blocks[0].client)
                try:
                    assert sock is not None
                    sock.shutdown(socket.SHUT_RDWR)
                except (AssertionError, OSError) as exc:
                    self.problems.append(f"step {step}: cutting {address} failed: {exc!r}")
                    return True
            else:
                self._signal(victim, signal.SIGKILL if kind == "kill" else signal.SIGSTOP)
            self.faults.append(fault)
            for index in sub_envs:
                self.pending[index] = fault
            return True

    def _signal(self, victim: int | str | None, signum: int) -> None:
        """Send ``signum`` to a server process (pid) or a container's PID 1 (container id)."""
        if victim is None:
            return
        if isinstance(victim, int):
            try:
                os.kill(victim, signum)
            except ProcessLookupError:
                pass
            return
        import docker.errors

        try:
            self.docker.containers.get(victim).kill(signal=signal.Signals(signum).name)
        except docker.errors.APIError:
            pass  # gone already (or not running): nothing left to wake or kill

    def _check_recovered(self, fault: Fault) -> None:
        """A fault fully reported: in one step, naming the expected error, its victim gone, nothing extra running."""
        if fault.blocks == 1 and len(set(fault.reported.values())) != 1:
            self.problems.append(
                f"{fault.kind} at step {fault.step}: reported over steps {sorted(fault.reported.values())}"
            )
        # Plain sessions (one block per sub-env) share a server: each notices its loss on its own,
        # in the step it was in (a frozen server's other sessions, once it was replaced).
        expected = set(_EXPECTED_ERRORS[fault.kind]) | ({"ConnectionLostError"} if fault.blocks > 1 else set())
        if fault.reasons - expected or not fault.reasons & set(_EXPECTED_ERRORS[fault.kind]):
            self.problems.append(f"{fault.kind} at step {fault.step}: reported as {sorted(fault.reasons)}")
        if isinstance(fault.victim, int):
            state = _state(fault.victim)
            if state is not None:
                self.problems.append(f"{fault.kind} at step {fault.step}: server {fault.victim} left in state {state}")
        elif fault.victim is not None:
            import docker.errors

            try:
                self.docker.containers.get(fault.victim)
                self.problems.append(f"{fault.kind} at step {fault.step}: container {fault.victim[:12]} left behind")
            except docker.errors.NotFound:
                pass
        counts = census(self.docker)
        servers = len(self.envs._providers)
        running = counts["containers"] if self.docker is not None else counts["processes"] - self.other_children
        # Servers killed by faults not yet reported may be gone, or (containers) not yet removed.
        unreported = sum(other.kind == "kill" and not other.done for other in self.faults)
        low, high = servers - unreported, servers + (unreported if self.docker is not None else 0)
        if not low <= running <= high:
            self.problems.append(
                f"{fault.kind} at step {fault.step}: {running} servers running for {servers} providers"
                f" ({unreported} killed, not yet reported)"
            )


def rollout(envs: Any, chaos: Chaos, seed: int = 0) -> int:
    """Step ``envs`` with random actions for ``chaos.steps`` steps while ``chaos`` injects; the steps done."""
    envs.reset(seed=seed)
    envs.action_space.seed(seed)
    done = 0
    with chaos:
        for step in range(chaos.steps):
            chaos.begin_step(step)
            result = envs.step(envs.action_space.sample())
            chaos.observe(step, result)
            done += 1
    return done
