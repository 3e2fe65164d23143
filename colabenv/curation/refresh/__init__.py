"""``colabenv catalog refresh FRAMEWORK``: new catalog entries derived from the indexes.

:mod:`.sources` reads the indexes and wheels (and holds what every framework's derivation
shares), :mod:`.frameworks` derives each framework's releases, and :mod:`.writer` writes them
into the catalog file in its own layout, listing contradictions instead of writing them."""
