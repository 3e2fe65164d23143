"""The catalog: curated facts about framework builds, drivers, NVIDIA components and TPUs, and
their loader; what the resolver loads, data and nothing else.

- :mod:`.load`: ``profiles/catalog/*.toml`` (and a team's overlays) into frozen models;
- :mod:`.packages`: ``cuda_packages.toml`` (the CUDA packages beside the frameworks);
- :mod:`.runtimes`: ``runtimes.toml`` (the Colab runtime versions ``--runtime`` names);
- :mod:`.tpu`: ``tpu.toml`` (TPU generations and each release's TPU build);
- :mod:`.components`: ``components.toml``, and which releases of an NVIDIA component carry
  kernels for given GPUs;
- :mod:`.deaths`: ``deaths.toml`` (each runtime's session limit, each silent-death remedy).

Loading is pure after the bytes are read. What keeps these files up to date (``colabenv
catalog refresh``, ``catalog archs``) is :mod:`colabenv.curation`."""
