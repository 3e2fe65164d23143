"""Post-restart verification: is the environment what was asked for, and does the GPU compute?

``verify()`` builds the expectation (a profile resolved for this host, a lock's pins, or the
restart marker's record), starts one smoke-test child per framework (``colabenv/_target/smoke/``)
and the VRAM probe concurrently, runs the static checks while they work, and returns a
:class:`VerifyReport`. A crash, hang or import error in a child is that child's FAIL; nothing a
child does can stop the other checks. Check names, statuses and the JSON shape are design
section 8.

One module per seam: :mod:`.report` (the report types), :mod:`.expectation` (what is expected),
:mod:`.families` (the table of check families ``verify()`` walks, in the report's order),
:mod:`.duplicates`, :mod:`.closure` (versions and the dependency closure), :mod:`.cuda` (with
the builds :mod:`colabenv.host.framework_builds` reads), :mod:`.components`, :mod:`.children`
(smoke tests and VRAM), :mod:`.restart` (marker and env), the
pre-training checklist's :mod:`.storage` (``io:<path>``), :mod:`.determinism` and
:mod:`.occupancy` (who holds each GPU, host RAM: joined to ``vram``), and :mod:`.run`
(``verify()`` itself). What is read of the host (``sys.path``, ``/proc``, NVML) is the host
layer's (``colabenv.host.installed``, ``colabenv.host.started``, ``colabenv.host.gpu_holders``,
``colabenv.host.memory``).
"""
