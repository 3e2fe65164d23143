"""The catalog: curated facts about framework builds, drivers, NVIDIA components and TPUs.

- :mod:`.load`: ``profiles/catalog/*.toml`` (and a team's overlays) into frozen models;
- :mod:`.tpu`: ``tpu.toml`` (TPU generations and each release's TPU build);
- :mod:`.components`: which releases of an NVIDIA component carry kernels for given GPUs;
- :mod:`.deaths`: ``deaths.toml`` (each runtime's session limit, each silent-death remedy);
- :mod:`.archs`: the GPU architectures a wheel's shared objects really carry, read from the
  binaries (``colabenv catalog archs``);
- :mod:`.refresh`: ``colabenv catalog refresh``, which derives new entries from the indexes.

Loading is pure after the bytes are read; :mod:`.archs` and :mod:`.refresh` do I/O (HTTP)."""
