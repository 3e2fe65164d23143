"""Package indexes: what colabenv asks of them itself (``lock`` and ``catalog refresh``).

:mod:`.urls` is the ``${VAR}`` rule for index URLs and the redaction of what was expanded (no
I/O); :mod:`.client` fetches project pages (PEP 691 JSON, else PEP 503 HTML), each request
bounded in time and size."""
