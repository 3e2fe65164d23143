"""``colabenv doctor``: what went wrong and what to do. :mod:`~colabenv.doctor.run` runs the
finders and orders what they find; :mod:`~colabenv.doctor.leftovers` names (and on request ends)
processes left holding a GPU; :mod:`~colabenv.doctor.imports` imports what the environment
should have, each in a child of the checked interpreter, and says why an import fails, with the
signatures of :mod:`~colabenv.doctor.signatures`."""
