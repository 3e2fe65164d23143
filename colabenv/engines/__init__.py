"""What the cluster engines a team scales out to run, written from one install plan and the
lock's target section: a Ray ``runtime_env``, a Slurm batch script, a Kubernetes Job. colabenv
schedules nothing itself: each file is the engine's own configuration. One module per engine:

- ``ray``: a Ray ``runtime_env`` (``render --format ray``);
- ``slurm``: the ``sbatch`` script of ``render --format slurm``;
- ``kubernetes``: a Job that verifies, then runs, the image built from the lock.
"""
