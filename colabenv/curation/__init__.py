"""Curation: the maintainers' tools that keep the catalog's files up to date, apart from the
catalog the resolver loads (:mod:`colabenv.catalog`).

- :mod:`.archs`: the GPU architectures a wheel's shared objects really carry, read from the
  binaries (``colabenv catalog archs``);
- :mod:`.refresh`: ``colabenv catalog refresh``, which derives new entries from the indexes
  and upstream's runtime lists, and writes them into the files in their own layout.

Both do I/O (HTTP, wheels, the catalog's files); the command line (:mod:`colabenv.cli.catalog`)
parses their arguments and prints what they found."""
