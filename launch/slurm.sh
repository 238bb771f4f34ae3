#!/usr/bin/env bash
# Multi-node under SLURM: `CONFIG=configs/X.yaml sbatch --nodes=N --gpus-per-node=G launch/slurm.sh key=value ...`
#
# One accelerate launcher per node (srun, one task per node; the accelerate configs use
# DeepSpeed's "standard" multinode launcher, so no pdsh/ssh), each starting G ranks.
# Preemption and time limits: SLURM signals this script 120 s ahead (--signal); it
# passes SIGTERM to the training ranks, which stop at once keeping the newest
# checkpoint whole (exit 143), and requeues the job (--requeue), which then continues
# the same run: resume=true is always passed (a run with no checkpoint starts fresh).
#SBATCH --job-name=vprl
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
#SBATCH --requeue
#SBATCH --signal=B:USR1@120
#SBATCH --open-mode=append
set -uo pipefail
cd "${SLURM_SUBMIT_DIR:-$(dirname "$0")/..}"
CONFIG=${CONFIG:?set CONFIG to an experiment YAML}
ZERO=${ZERO:-2}
ACCEL_CONFIG=${ACCEL_CONFIG:-configs/accelerate/zero${ZERO}.yaml}
GPUS_PER_NODE=${GPUS_PER_NODE:-$(nvidia-smi -L | wc -l)}
MASTER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
PORT=${MASTER_PORT:-29500}

preempted=0
on_signal() {
    preempted=1
    echo "slurm.sh: signal received; stopping the ranks and requeueing job $SLURM_JOB_ID" >&2
    kill -TERM "$train_pid" 2>/dev/null   # srun passes it on to every task
}
trap on_signal USR1 TERM

# The launcher ignores SIGTERM: accelerate's one-process launcher would otherwise die at
# once and end the job step (its processes killed) while the rank is still saying why it
# stopped; torchrun's agent installs its own handler, passes the signal on and waits.
srun --kill-on-bad-exit=1 bash -c "trap '' TERM; accelerate launch --config_file $ACCEL_CONFIG \
    --num_machines $SLURM_NNODES --machine_rank \$SLURM_NODEID --main_process_ip $MASTER \
    --main_process_port $PORT --num_processes $((SLURM_NNODES * GPUS_PER_NODE)) \
    train/iterate.py --config $CONFIG $* resume=true" &
train_pid=$!
wait "$train_pid"; status=$?
while kill -0 "$train_pid" 2>/dev/null; do wait "$train_pid"; status=$?; done  # `wait` returns early on a trapped signal
if [ "$preempted" = 1 ]; then
    scontrol requeue "$SLURM_JOB_ID"
    exit 0
fi
exit "$status"
