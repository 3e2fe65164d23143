"""The application layer: one way from a profile to what gets installed, which every command
and the Python API take.

``resolution``: a profile and a target source (flags and ``COLABENV_*`` variables over this
host, or a profile's named target) to a ``Resolution``, with the catalog and its overlays;
``install``: a resolution, or a lock file, to the install plan the script, the container
definitions and ``bootstrap()`` render; ``fingerprints``: two ``detect --json`` files
compared (``colabenv diff``); ``starter``: a starter profile of this Python (``colabenv init``).
"""
