#!/bin/bash
# HyperPod lifecycle script (EKS orchestrator): runs once as root when an instance is created.
# Versioned with hyperpod-inference and uploaded by components/hyperpod_cluster.py to the stack's
# lifecycle bucket; never fetched from a moving branch.
#
# EKS-orchestrated HyperPod nodes join the cluster without help from this script; what it does:
#   * logs to /var/log/provision/provisioning.log (HyperPod ships it to CloudWatch on failure);
#   * puts containerd's image store on the secondary EBS volume mounted at
#     /opt/sagemaker (instance group `ebsVolumeSizeGb`), because inference images are large and the root
#     volume is small;
#   * exits non-zero on failure so HyperPod replaces the instance instead of joining a broken node.
set -euo pipefail

LOG_DIR=/var/log/provision
mkdir -p "$LOG_DIR"
exec > >(tee -a "$LOG_DIR/provisioning.log") 2>&1

echo "[on_create] start $(date --iso-8601=seconds) on $(hostname)"

DATA=/opt/sagemaker
if mountpoint -q "$DATA"; then
  echo "[on_create] secondary EBS volume is mounted at $DATA"
  if [ -d /etc/containerd ] && ! grep -q "root = \"$DATA/containerd\"" /etc/containerd/config.toml 2>/dev/null; then
    mkdir -p "$DATA/containerd"
    if grep -q '^root = ' /etc/containerd/config.toml 2>/dev/null; then
      sed -i "s|^root = .*|root = \"$DATA/containerd\"|" /etc/containerd/config.toml
    else
      sed -i "1i root = \"$DATA/containerd\"" /etc/containerd/config.toml
    fi
    if systemctl is-active --quiet containerd; then systemctl restart containerd; fi
    echo "[on_create] containerd root -> $DATA/containerd"
  fi
else
  echo "[on_create] $DATA is not a mount point; keeping containerd on the root volume"
fi

echo "[on_create] done $(date --iso-8601=seconds)"
