"""colabenv's version, in a module that imports nothing: every module may read it, and the
package's own ``__init__`` (which imports some of them lazily) re-exports it."""

__version__ = "0.1.0"
