"""The VRAM probe child (stdlib only, Python 3.8+; see ``__main__.py``): free and total
memory per GPU, then the largest single block that can be allocated, by a bounded binary
search. It waits for the parent to touch ``--go`` (the smoke tests are done, so the probe
cannot starve them), and gives up at ``--deadline`` seconds after its start."""

from __future__ import annotations

import functools
import importlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from base import emit, one_line

EXIT_DEADLINE = 124
MiB = 1024 * 1024
PROBE_STEP = 64 * MiB
PROBE_MAX_TRIES = 24


class _Allocator:
    """Free/total memory and one trial allocation per GPU, for the framework that is present."""

    def __init__(self, framework: str) -> None:
        self.framework = framework
        self.module: Any = importlib.import_module({"cupy": "cupy"}.get(framework, framework))
        self._jnp: Any = None
        self._devices: list[Any] = []
        if framework == "jax":
            self._jnp = importlib.import_module("jax.numpy")
            try:
                self._devices = list(self.module.devices("gpu"))
            except RuntimeError:
                self._devices = []

    def count(self) -> int:
        if self.framework == "torch":
            return int(self.module.cuda.device_count()) if self.module.cuda.is_available() else 0
        if self.framework == "cupy":
            return int(self.module.cuda.runtime.getDeviceCount())
        return len(self._devices)

    def memory(self, index: int) -> tuple[int | None, int | None]:
        if self.framework == "torch":
            free, total = self.module.cuda.mem_get_info(index)
            return int(free), int(total)
        if self.framework == "cupy":
            with self.module.cuda.Device(index):
                free, total = self.module.cuda.runtime.memGetInfo()
            return int(free), int(total)
        stats = self._devices[index].memory_stats() or {}
        limit, used = stats.get("bytes_limit"), stats.get("bytes_in_use", 0)
        if limit is None:
            return None, None
        return int(limit) - int(used), int(limit)

    def fits(self, index: int, size: int) -> bool:
        try:
            if self.framework == "torch":
                block = self.module.empty(size, dtype=self.module.uint8, device=f"cuda:{index}")
                del block
                self.module.cuda.empty_cache()
            elif self.framework == "cupy":
                with self.module.cuda.Device(index):
                    block = self.module.empty(size, dtype=self.module.uint8)
                    del block
                    self.module.get_default_memory_pool().free_all_blocks()
            else:
                with self.module.default_device(self._devices[index]):
                    block = self._jnp.zeros((size,), dtype=self._jnp.uint8)
                    block.block_until_ready()
                    block.delete()
        except Exception:
            return False
        return True


def largest_block(fits: Callable[[int], bool], upper: int, deadline: float) -> tuple[int, bool]:
    """The largest size in [0, upper] for which ``fits`` holds, to within PROBE_STEP.

    Returns (size, complete); ``complete`` is False when the deadline cut the search short, and
    the size is then a lower bound.
    """
    if upper <= 0:
        return 0, True
    if fits(upper):
        return upper, True
    low, high, tries = 0, upper, 1
    while high - low > PROBE_STEP and tries < PROBE_MAX_TRIES:
        if time.monotonic() >= deadline:
            return low, False
        middle = (low + high) // 2
        tries += 1
        if fits(middle):
            low = middle
        else:
            high = middle
    return low, True


def _watchdog(seconds: float, what: str) -> threading.Timer:
    """Exit this process if ``what`` takes longer than ``seconds`` (a hanging import)."""

    def expire() -> None:
        sys.stderr.write(f"colabenv vram probe: {what} did not finish within {seconds:g}s\n")
        sys.stderr.flush()
        os._exit(EXIT_DEADLINE)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def vram(framework: str, go_file: str, deadline_s: float, search_s: float, result_path: str) -> int:
    started = time.monotonic()
    result: dict[str, Any] = {
        "mode": "vram",
        "framework": framework,
        "gpus": [],
        "error": None,
        "probed": False,
        "reason": None,
    }
    watchdog = _watchdog(deadline_s, f"importing {framework}")
    try:
        allocator = _Allocator(framework)
        count = allocator.count()
        memory = [allocator.memory(i) for i in range(count)]
    except Exception as exc:
        watchdog.cancel()
        result["error"] = one_line(exc)
        traceback.print_exc()
        emit(result, result_path)
        return 1
    watchdog.cancel()
    for index, (free, total) in enumerate(memory):
        result["gpus"].append(
            {"index": index, "free": free, "total": total, "largest": None, "complete": None}
        )
    while not os.path.exists(go_file):
        if time.monotonic() - started >= deadline_s:
            result["reason"] = "smoke tests still running at the deadline"
            emit(result, result_path)
            return 0
        time.sleep(0.02)
    search_deadline = time.monotonic() + search_s
    for gpu in result["gpus"]:
        index = gpu["index"]
        free = allocator.memory(index)[0]
        gpu["free"] = free if free is not None else gpu["free"]
        upper = gpu["free"] if gpu["free"] is not None else gpu["total"]
        if upper is None:
            continue
        size, complete = largest_block(functools.partial(allocator.fits, index), upper, search_deadline)
        gpu["largest"], gpu["complete"] = size, complete
    result["probed"] = True
    emit(result, result_path)
    return 0
