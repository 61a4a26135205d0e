#!/usr/bin/env bash
# Stop the daemons slurm-up.sh started, by their pid files (jobs cancelled first: with
# proctrack/linuxproc a job's steps would outlive slurmd).
scancel --partition=debug 2>/dev/null && sleep 1
for f in /run/slurmd.pid /run/slurmctld.pid /run/munge/munged.pid; do
  pid=$(cat "$f" 2>/dev/null) || continue
  kill "$pid" 2>/dev/null && echo "stopped $pid ($f)"
done
exit 0
