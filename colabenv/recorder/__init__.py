"""``colabenv watch``: the recorder that outlives the kernel (a package named ``recorder``:
``colabenv.watch`` is the function of the Python API).

:mod:`colabenv.recorder.control` starts, stops and reports on the recorder of a state directory;
:mod:`colabenv.recorder.loop` is the recorder process itself (``python -m colabenv.recorder``,
:mod:`colabenv.recorder.__main__`); :mod:`colabenv.recorder.ring` is its ring file and
:func:`~colabenv.recorder.ring.read_ring`, what ``doctor`` reads; :mod:`colabenv.recorder.codec` turns
a sample into a record's bytes and back. What a sample holds is read by
:mod:`colabenv.host.sampler`.
"""
