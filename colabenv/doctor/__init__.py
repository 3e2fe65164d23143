"""``colabenv doctor``: what happened, and what to do.

- :mod:`.deaths`: why a kernel died without a traceback, from the recorder's samples, the memory
  cgroup and the kernel log's OOM lines (pure)."""
