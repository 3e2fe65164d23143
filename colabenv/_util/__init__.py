"""What every layer uses and none owns: bounded file reads and atomic writes (:mod:`.files`),
the one place that starts processes (:mod:`.processes`), the typed reader of parsed documents
(:mod:`.reader`), TOML (:mod:`.toml`), the cache of parsed catalog files (:mod:`.cache`),
number bounds (:mod:`.bounds`), small PEP 508 readings
(:mod:`.pep508`) and where the shipped files are (:mod:`.resources`)."""
