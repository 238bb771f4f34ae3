#!/usr/bin/env bash
# Multi-node under SLURM: `sbatch --nodes=N --gpus-per-node=G launch/slurm.sh key=value ...`
#SBATCH --job-name=vprl
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
set -euo pipefail
cd "${SLURM_SUBMIT_DIR:-$(dirname "$0")/..}"
CONFIG=${CONFIG:?set CONFIG to an experiment YAML}
ZERO=${ZERO:-2}
GPUS_PER_NODE=${GPUS_PER_NODE:-$(nvidia-smi -L | wc -l)}
MASTER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
# One accelerate launcher per node; each starts GPUS_PER_NODE ranks.
srun bash -c "accelerate launch --config_file configs/accelerate/zero${ZERO}.yaml \
    --num_machines $SLURM_NNODES --machine_rank \$SLURM_NODEID --main_process_ip $MASTER \
    --num_processes $((SLURM_NNODES * GPUS_PER_NODE)) \
    train/iterate.py --config $CONFIG $*"
