"""Profiles: the TOML a project (or a team's golden profile) writes, read into a frozen
:class:`~colabenv.models.Profile`.

:mod:`.load` is the entry (:func:`~colabenv.profile.load.load_profile`,
:func:`~colabenv.profile.load.find_profile`); :mod:`.files` reads a file and its ``extends``
chain, :mod:`.sections` reads each table, :mod:`.rules` checks one value (specifiers, URLs,
requirements) and :mod:`.env` the ``[env]`` table."""
