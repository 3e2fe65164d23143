"""Choosing wheels: (profile, target, catalog) to a :class:`~colabenv.models.Resolution`.

:mod:`.resolver` is the resolver (the rules: docs/architecture.md; what differs by accelerator
it asks of :mod:`colabenv.accelerators`), :mod:`.explain` what it says when nothing fits, and
:mod:`.overrides` the target overrides from flags and ``COLABENV_*`` variables (the precedence
written once). No I/O."""
