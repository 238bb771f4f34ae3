#!/usr/bin/env bash
# Multi-node under SLURM: `CONFIG=configs/X.yaml sbatch --nodes=N --gpus-per-node=G launch/slurm.sh key=value ...`
# Check a job before submitting it (no GPU needed; SLURM_NNODES and GPUS_PER_NODE stand
# for what sbatch would give): `CONFIG=... SLURM_NNODES=4 GPUS_PER_NODE=8 launch/slurm.sh --dry-run`
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
PY=${PYTHON:-python}
ACCEL_CONFIG=${ACCEL_CONFIG:-configs/accelerate/zero${ZERO}.yaml}
GPUS_PER_NODE=${GPUS_PER_NODE:-$("$PY" -c 'from train.machine import gpu_count; print(gpu_count())')}
for arg in "$@"; do [ "$arg" = --dry-run ] && DRY_RUN=1; done
if [ "${DRY_RUN:-0}" = 1 ]; then
    # Check the job here, before sbatch: the launch file for SLURM_NNODES x GPUS_PER_NODE
    # ranks, the config, the data and the model; what needs a GPU is named as skipped.
    NPROC=$(( ${SLURM_NNODES:-1} * GPUS_PER_NODE ))
    count=()
    [ "$NPROC" -gt 0 ] && count=(--num-processes "$NPROC")  # else the launch file's own count
    exec "$PY" -m train.launch --config "$CONFIG" --accelerate-config "$ACCEL_CONFIG" "${count[@]}" "$@"
fi
if [ "$GPUS_PER_NODE" -lt 1 ]; then
    echo "slurm.sh: error: no GPU on $(hostname); ask for them (sbatch --gpus-per-node=G) or set GPUS_PER_NODE" >&2
    exit 2
fi
MASTER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
PORT=${MASTER_PORT:-29500}
NPROC=$((SLURM_NNODES * GPUS_PER_NODE))
# Refuse here, once, what every rank would refuse: a missing package, disagreeing precision.
"$PY" -m train.launch --check --config "$CONFIG" --accelerate-config "$ACCEL_CONFIG" \
    --num-processes "$NPROC" "$@" || exit 2
export ACCEL_CONFIG MASTER PORT NPROC CONFIG

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
# The arguments travel as arguments ("$@" of the inner bash), never pasted into its
# command string, so 'rewards=[correctness, parse]' arrives as one override.
srun --kill-on-bad-exit=1 bash -c 'trap "" TERM; accelerate launch --config_file "$ACCEL_CONFIG" \
    --num_machines "$SLURM_NNODES" --machine_rank "$SLURM_NODEID" --main_process_ip "$MASTER" \
    --main_process_port "$PORT" --num_processes "$NPROC" \
    train/iterate.py --config "$CONFIG" "$@" resume=true' slurm-task "$@" &
train_pid=$!
wait "$train_pid"; status=$?
while kill -0 "$train_pid" 2>/dev/null; do wait "$train_pid"; status=$?; done  # `wait` returns early on a trapped signal
if [ "$preempted" = 1 ]; then
    scontrol requeue "$SLURM_JOB_ID"
    exit 0
fi
exit "$status"
