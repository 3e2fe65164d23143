"""``colabenv watch``: the recorder that outlives the kernel.

:mod:`colabenv.watch.control` starts, stops and reports on the recorder of a state directory;
:mod:`colabenv.watch.recorder` is the recorder process itself (``python -m colabenv.watch``,
:mod:`colabenv.watch.__main__`); :mod:`colabenv.watch.ring` is its ring file and
:func:`~colabenv.watch.ring.read_ring`, what ``doctor`` reads; :mod:`colabenv.watch.codec` turns
a sample into a record's bytes and back. What a sample holds is read by
:mod:`colabenv.host.sampler`.
"""
