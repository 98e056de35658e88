"""A clock the providers' waits can sleep on without sleeping: ``sleep`` advances ``clock`` (shared by the tests of
the dynamic providers that poll)."""

from __future__ import annotations


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def clock(self) -> float:
        return self.now
