"""Programs that run in the *target's* Python (3.8+, standard library only), by their path:
they import nothing of colabenv, because the interpreter they run in need not have it.

- :mod:`.helper`: the helper every bootstrap script embeds (``python - SUBCOMMAND ...``);
- ``smoke/``: the smoke children of ``verify`` (a folder run as ``python .../smoke MODE``);
- :mod:`.storage`: the ``io:<path>`` child of ``verify``.

colabenv finds them through :mod:`colabenv._util.resources`, and may import their pure parts
(the helper's ``${VAR}`` expansion, the smoke child's seeding calls, the wheelhouse
program's rules for a wheelhouse's file names and part files) so that a rule is written
once."""
