"""Everything colabenv reads from the host, and the only package that does.

:mod:`.detect` is the entry (:func:`~colabenv.host.detect.detect`: a
:class:`~colabenv.models.Fingerprint` and the :class:`~colabenv.models.Target`); it reads the GPUs
through :mod:`.gpu` (NVML, ``/proc``, ``nvidia-smi``; loaded only when GPUs must be probed),
a TPU through :mod:`.tpu` and AMD GPUs through :mod:`.kfd` and :mod:`.rocm`, each when an
accelerator kind asks :mod:`.readings` for it. :mod:`.probe` is what they share (the NVML
interface, bounded reads of the host). :mod:`.installed` reads installed distributions, :mod:`.interpreter` an
interpreter's facts (this one, or another by a probe), :mod:`.started` when a process or its
kernel started, and :mod:`.framework_builds` the CUDA each installed framework was built for.
:mod:`.memory` reads the host's memory and the memory cgroup a process is in, :mod:`.kernel_log`
the OOM lines of the kernel log."""
