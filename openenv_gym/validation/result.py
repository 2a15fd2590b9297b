"""`CheckResult`: what one check of ``openenv-gym validate`` found (PASS, FAIL or SKIP, and why)."""

from __future__ import annotations

import dataclasses
import enum

__all__ = ["CheckResult", "Status"]


class Status(enum.Enum):
    """How a check went: it held, it did not, or it could not be made (the reason says why)."""

    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """One line of ``openenv-gym validate``'s table.

    Attributes:
        name: the check (``"health"``, ``"determinism"``, ...).
        status: PASS, FAIL or SKIP.
        reason: what was checked and found, or what is wrong, or why it was not checked.
    """

    name: str
    status: Status
    reason: str

    @classmethod
    def passed(cls, name: str, reason: str) -> CheckResult:
        return cls(name, Status.PASS, reason)

    @classmethod
    def failed(cls, name: str, reason: str) -> CheckResult:
        return cls(name, Status.FAIL, reason)

    @classmethod
    def skipped(cls, name: str, reason: str) -> CheckResult:
        return cls(name, Status.SKIP, reason)

    def __str__(self) -> str:
        return f"{self.status.value} {self.name}: {self.reason}"
