"""`Window`: a remote env's RGB frames shown here, in a pygame window (PettingZoo's ``render_mode="human"``)."""

from __future__ import annotations

from typing import Any

__all__ = ["Window"]


class Window:
    """Shows frames at most ``fps`` a second, as a local env's human mode does; made on the first frame."""

    def __init__(self, fps: float | None) -> None:
        self.fps = fps or 30
        self._screen: Any = None
        self._clock: Any = None

    def show(self, frame: Any) -> None:
        """Draw ``frame`` (an ``H x W x 3`` uint8 array)."""
        import pygame  # gymnasium[classic-control] and PettingZoo's rendering bring it

        height, width = frame.shape[:2]
        if self._screen is None or self._screen.get_size() != (width, height):
            pygame.display.init()
            self._screen = pygame.display.set_mode((width, height))
            self._clock = pygame.time.Clock()
        pygame.surfarray.blit_array(self._screen, frame.swapaxes(0, 1))
        pygame.event.pump()
        pygame.display.flip()
        self._clock.tick(self.fps)

    def close(self) -> None:
        if self._screen is not None:
            import pygame

            pygame.display.quit()
            self._screen = None
