"""What differs by accelerator, one module per kind behind one protocol, the way cibuildwheel
keeps its platforms: :mod:`~colabenv.accelerators.base` (the protocol every kind meets and what
the kinds share), and the kinds, in the order ``detect`` asks them:
:mod:`~colabenv.accelerators.tpu` (Google TPUs), :mod:`~colabenv.accelerators.nvidia` (NVIDIA
GPUs, CUDA builds), :mod:`~colabenv.accelerators.rocm` (AMD GPUs, ROCm builds) and
:mod:`~colabenv.accelerators.cpu` (the CPU alone). Beside them:
:mod:`~colabenv.accelerators.eligibility` (the rules of a build's eligibility the kinds and
the resolver share: its Python, the driver's floors, its kernels for each GPU),
:mod:`~colabenv.accelerators.nearest` (the nearest build a refused target is told of) and
:mod:`~colabenv.accelerators.registry` (the one list of kinds, and the kind of a target).
Adding a kind: docs/architecture.md#adding-an-accelerator."""
