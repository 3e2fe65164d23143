"""What differs by accelerator, one module per kind behind one protocol, the way cibuildwheel
keeps its platforms: :mod:`~colabenv.accelerators.base` (the protocol every kind meets),
:mod:`~colabenv.accelerators.nvidia`, :mod:`~colabenv.accelerators.tpu`,
:mod:`~colabenv.accelerators.cpu`, :mod:`~colabenv.accelerators.eligibility` (the rules the
kinds share), and :mod:`~colabenv.accelerators.registry` (the one list of
kinds, and the kind of a target). Adding a kind: docs/architecture.md#adding-an-accelerator."""
