"""Locks: hashed pins for one target (or, schema 3, one section per named target), made with uv
or pip-tools and read back strictly.

:mod:`.content` is what a lock holds (its header and pins); :mod:`.file` reads, parses and
writes one in either of its forms, :mod:`.requirements` (a pip requirements file) and
:mod:`.pylock` (PEP 751); :mod:`.fit` says whether a lock is still the one to install for a
profile and target; :mod:`.make` makes one (the framework files checked on their indexes, uv or
pip-tools run isolated from the user's configuration). All but :mod:`.make` and
:func:`~colabenv.lock.file.read_lock` do no I/O."""
