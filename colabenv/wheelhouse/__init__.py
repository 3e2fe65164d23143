"""Wheelhouses: a folder of a lock's wheels, each checked against the lock's sha256, for installs
with no index (a Kaggle Dataset) or as a persistent cache (``[install] wheelhouse``).

:mod:`.plan` says which file of each pin a target installs and writes the manifest (no I/O);
:mod:`.fetch` downloads them (``colabenv bundle``); :mod:`.progress` shows how far it is.
"""
