#!/usr/bin/env bash
# Bring up a single-node SLURM cluster on Debian 12 (slurm-wlm 22.05) for the executor tests.
# Run as root; idempotent (skips apt and running daemons). From ../shared/recipes/slurm.md.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
t0=$SECONDS

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi

[ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
chown munge:munge /etc/munge/munge.key && chmod 0600 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge        # no systemd: no RuntimeDirectory
if ! munge -n >/dev/null 2>&1; then
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do munge -n >/dev/null 2>&1 && break; sleep 0.1; done
fi
munge -n | unmunge >/dev/null

HOST=$(hostname -s)
MEM=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 * 9 / 10 ))
NODE=$(slurmd -C | head -1 | sed "s/RealMemory=[0-9]*/RealMemory=$MEM/")
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=ci
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=3600
KillWait=5
SchedulerParameters=batch_sched_delay=0
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
$NODE NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
install -d -o slurm -g slurm -m 0755 /var/spool/slurmctld /var/log/slurm
install -d -m 0755 /var/spool/slurmd

scontrol ping >/dev/null 2>&1 || /usr/sbin/slurmctld
pgrep -F /run/slurmd.pid >/dev/null 2>&1 || /usr/sbin/slurmd
st=""
for _ in $(seq 150); do
  st=$(sinfo -h -n "$HOST" -o %T 2>/dev/null || true)
  case "$st" in
    idle) break ;;
    drain*|down*) scontrol update nodename="$HOST" state=resume 2>/dev/null || true ;;
  esac
  sleep 0.2
done
if [ "$st" != idle ]; then
  sinfo -N -o '%N %T %E' || true; tail -n 30 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log; exit 1
fi
echo "slurm up in $((SECONDS - t0))s"
