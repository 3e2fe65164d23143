"""``colabenv doctor``: what happened, and what to do (a package named ``doctor`` would rebind
the function ``colabenv.doctor()``).

- :mod:`.run`: ``doctor()``: runs the finders, the most likely cause first, into the report;
- :mod:`.deaths`: why a kernel died without a traceback, from the recorder's samples, the memory
  cgroup and the kernel log's OOM lines (pure);
- :mod:`.leftovers`: processes left holding a GPU, named (and on request ended);
- :mod:`.imports`: what the environment should have, imported each in a child of the checked
  interpreter, and why an import fails, with the signatures of :mod:`.signatures`;
- :mod:`.gpu_variables`: a variable of the environment that hides the GPU's kernels
  (``HSA_OVERRIDE_GFX_VERSION``), judged against the installed torch's gfx list (pure)."""
