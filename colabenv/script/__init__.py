"""The bootstrap script and what it leaves behind.

:mod:`.render` turns a resolution into the script's lines, :mod:`.bash` holds its fixed bash
and the one quoting rule, :mod:`.container` wraps the same script in a Dockerfile or an
Apptainer definition; :mod:`.state` is the state-directory rule and every name the script and
Python share, :mod:`.marker` the restart marker the script writes last. Rendering does no I/O;
:func:`~colabenv.script.marker.read_marker` reads the marker back, bounded."""
