"""The command line: :mod:`.entry` (the console script), :mod:`.main` (parsing, dispatch,
errors and exit codes; the only place a :class:`~colabenv.errors.ColabenvError` is caught),
:mod:`.parser` (the arguments of every command), :mod:`.common` (what commands share) and one
module per command, each with ``run(args) -> int``, imported only when that command runs."""
