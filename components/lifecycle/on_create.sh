#!/bin/bash
# HyperPod lifecycle script (EKS orchestrator): runs once as root when an instance is created.
# Versioned with hyperpod-inference and uploaded by components/hyperpod_cluster.py to the stack's
# lifecycle bucket; never fetched from a moving branch. docs/operator.md ("Node bootstrap") explains it.
#
# EKS-orchestrated HyperPod nodes join the cluster without help from this script. What it does:
#   * logs to /var/log/provision/provisioning.log (HyperPod ships it to CloudWatch on failure);
#   * waits (up to 60 s, like the reference scripts) for the secondary EBS volume HyperPod mounts at
#     /opt/sagemaker (instance group `ebsVolumeSizeGb`);
#   * puts containerd's root (image store) on that volume, because inference images are large and the
#     root volume is small. The old store's contents are copied first: the sandbox (pause) image the AMI
#     pre-loads lives there, and a root without it cannot start pods when the image is local-only.
#     Where the setting lives depends on the AMI, because /etc/containerd/config.toml is *generated*:
#       - Amazon Linux 2 (EKS AMIs up to Kubernetes 1.32): bootstrap.sh copies
#         /etc/eks/containerd/containerd-config.toml over /etc/containerd/config.toml whenever they
#         differ (awslabs/amazon-eks-ami templates/al2/runtime/bootstrap.sh), so the template is edited
#         (and the live copy too, when bootstrap already ran);
#       - Amazon Linux 2023 (the only EKS AMIs from Kubernetes 1.33 on; "Kubernetes version 1.32 is the
#         last version for which Amazon EKS will release AL2 AMIs", EKS user guide eks-ami-build-scripts):
#         nodeadm rewrites /etc/containerd/config.toml with `root = "/var/lib/containerd"` on every node
#         init (awslabs/amazon-eks-ami nodeadm/internal/containerd/config.go, config.template.toml), so a
#         systemd drop-in runs a helper that derives a copy with the new root from whatever nodeadm wrote,
#         each time containerd starts, and runs containerd with that copy (only the top-level `root`
#         changes: a `root =` key inside a table belongs to a plugin and is kept);
#       - anything else (os-release absent or another OS): containerd is left alone.
#     References: aws/sagemaker-hyperpod-cluster-setup@b920fcf4 eks/cloudformation/resources/lifecycle-script/
#     base-config/on_create.sh and awslabs/awsome-distributed-ai@95b939cd 1.architectures/
#     7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/on_create_main.sh (same AL2/AL2023 split);
#   * moves the kubelet's root directory /var/lib/kubelet (pods' emptyDir volumes, container logs and
#     writable layers counted as pod ephemeral storage) onto the same volume and leaves a symlink in its
#     place, as AWS's script does for every OS (awslabs/awsome-distributed-ai@95b939cd on_create_main.sh
#     lines 118-133: move the contents to /opt/sagemaker/kubelet, `rmdir`, `ln -s`). Unlike that script it
#     never deletes an existing /opt/sagemaker/kubelet, stops the kubelet while it moves the directory if
#     the kubelet runs, and leaves the directory alone when something is mounted below it (pods already
#     ran there: moving live mounts would break them) or when it is already a symlink;
#   * is idempotent: a second run changes nothing;
#   * exits non-zero only on a real failure, so HyperPod replaces the instance instead of joining a
#     broken node; a missing volume or file is logged and skipped.
#
# HPI_LIFECYCLE_ROOT (tests only): a directory that stands in for / (the tests run the script against a
# fake root). HPI_MOUNT_WAIT_TRIES (tests only): how many 5 s waits for the volume (default 12).
set -euo pipefail

ROOT="${HPI_LIFECYCLE_ROOT:-}"
TRIES="${HPI_MOUNT_WAIT_TRIES:-12}"
DATA=/opt/sagemaker
NEW_ROOT="$DATA/containerd/data-root"
OLD_ROOT=/var/lib/containerd
ROOT_LINE="root = \"$NEW_ROOT\""
KUBELET_DIR=/var/lib/kubelet
NEW_KUBELET="$DATA/kubelet"
# The top-level `root` rule, in one place for set_root_line and the AL2023 helper: TOML keys before the first
# [table] are top-level. Replace the first top-level `root =` line (commented or not), else add one just before
# the first table (or at the end). Lines inside tables are never touched.
ROOT_AWK='
  !done && /^\[/ { print line; print ""; done = 1 }
  !done && /^[# ]*root[[:space:]]*=/ { print line; done = 1; next }
  { print }
  END { if (!done) print line }
'

LOG_DIR="$ROOT/var/log/provision"
mkdir -p "$LOG_DIR"
exec > >(tee -a "$LOG_DIR/provisioning.log") 2>&1

log() { echo "[on_create] $*"; }

# True when $1 is a mount point according to the kernel's mount table (/proc/mounts field 2).
is_mounted() {
  awk -v dir="$1" '$2 == dir { found = 1 } END { exit found ? 0 : 1 }' "$ROOT/proc/mounts" 2>/dev/null
}

# Set the top-level `root = ...` in $1 (ROOT_AWK).
set_root_line() {
  local file="$1" tmp
  if grep -qxF "$ROOT_LINE" "$file"; then
    log "$file already has $ROOT_LINE"
    return 0
  fi
  tmp="$(mktemp "$file.XXXXXX")"
  awk -v line="$ROOT_LINE" "$ROOT_AWK" "$file" >"$tmp"
  chmod --reference="$file" "$tmp"
  mv "$tmp" "$file"
  log "$file: $ROOT_LINE"
}

containerd_active() { systemctl is-active --quiet containerd 2>/dev/null; }
kubelet_active() { systemctl is-active --quiet kubelet 2>/dev/null; }

# True when something is mounted at $1 or below it (/proc/mounts field 2).
has_mounts_below() {
  awk -v dir="$1" '$2 == dir || index($2, dir "/") == 1 { found = 1 } END { exit found ? 0 : 1 }' \
    "$ROOT/proc/mounts" 2>/dev/null
}

# Copy the old store into the new root once (cp -a keeps owners, modes, xattrs and hard links).
copy_store() {
  if [ -d "$ROOT$NEW_ROOT" ] && [ -n "$(ls -A "$ROOT$NEW_ROOT" 2>/dev/null)" ]; then
    log "$NEW_ROOT already populated; not copying"
    return 0
  fi
  mkdir -p "$ROOT$NEW_ROOT"
  if [ -d "$ROOT$OLD_ROOT" ] && [ -n "$(ls -A "$ROOT$OLD_ROOT" 2>/dev/null)" ]; then
    cp -a "$ROOT$OLD_ROOT/." "$ROOT$NEW_ROOT/"
    log "copied $OLD_ROOT into $NEW_ROOT"
  else
    log "$OLD_ROOT is empty or absent; nothing to copy"
  fi
}

configure_al2() {
  local template="$ROOT/etc/eks/containerd/containerd-config.toml"
  local live="$ROOT/etc/containerd/config.toml"
  if [ ! -f "$template" ]; then
    log "Amazon Linux 2 without $template (not an EKS AMI layout); leaving containerd alone"
    return 0
  fi
  if grep -qxF "$ROOT_LINE" "$template" && { [ ! -f "$live" ] || grep -qxF "$ROOT_LINE" "$live"; }; then
    log "containerd root already on $DATA"
    return 0
  fi
  local was_active=0
  if containerd_active; then was_active=1; systemctl stop containerd; fi
  copy_store
  set_root_line "$template"
  if [ -f "$live" ]; then set_root_line "$live"; fi
  if [ "$was_active" = 1 ]; then systemctl start containerd; fi
}

configure_al2023() {
  local dropin_dir="$ROOT/etc/systemd/system/containerd.service.d"
  local dropin="$dropin_dir/50-hyperpod-inference-root.conf"
  local helper=/usr/local/sbin/hyperpod-inference-containerd-config
  local derived="$DATA/containerd/config.toml"
  local helper_text dropin_text
  helper_text="#!/bin/sh
# Written by hyperpod-inference on_create.sh. nodeadm regenerates /etc/containerd/config.toml on node
# init; this derives a copy whose top-level root is on the secondary EBS volume, each time containerd
# starts. A root key inside a table (a plugin's) is kept. HPI_LIFECYCLE_ROOT: tests only.
set -eu
R=\"\${HPI_LIFECYCLE_ROOT:-}\"
awk -v line='$ROOT_LINE' '$ROOT_AWK' \"\$R/etc/containerd/config.toml\" >\"\$R$derived.tmp\"
mv \"\$R$derived.tmp\" \"\$R$derived\""
  dropin_text="# Written by hyperpod-inference on_create.sh: containerd root on the secondary EBS volume.
[Unit]
RequiresMountsFor=$DATA
[Service]
ExecStartPre=$helper
ExecStart=
ExecStart=/usr/bin/containerd --config $derived"
  if [ -f "$dropin" ] && [ "$(cat "$dropin")" = "$dropin_text" ] \
    && [ -f "$ROOT$helper" ] && [ "$(cat "$ROOT$helper")" = "$helper_text" ]; then
    log "containerd drop-in already present"
    return 0
  fi
  local was_active=0
  if containerd_active; then was_active=1; systemctl stop containerd; fi
  copy_store
  mkdir -p "$(dirname "$ROOT$helper")" "$dropin_dir"
  printf '%s\n' "$helper_text" >"$ROOT$helper"
  chmod 0755 "$ROOT$helper"
  printf '%s\n' "$dropin_text" >"$dropin"
  log "wrote $helper and $dropin"
  systemctl daemon-reload
  if [ "$was_active" = 1 ]; then systemctl start containerd; fi
}

# /var/lib/kubelet onto the volume, a symlink in its place (see the header for the source and the differences).
move_kubelet() {
  local old="$ROOT$KUBELET_DIR" new="$ROOT$NEW_KUBELET"
  if [ -L "$old" ]; then
    if [ "$(readlink "$old")" = "$NEW_KUBELET" ]; then
      log "$KUBELET_DIR already links to $NEW_KUBELET"
    else
      log "$KUBELET_DIR is a symlink to $(readlink "$old"), not ours; leaving it"
    fi
    return 0
  fi
  if has_mounts_below "$KUBELET_DIR"; then
    log "something is mounted below $KUBELET_DIR (pods ran here); keeping it on the root volume"
    return 0
  fi
  local was_active=0
  if kubelet_active; then was_active=1; systemctl stop kubelet; fi
  mkdir -p "$new"
  if [ -d "$old" ]; then
    cp -a "$old/." "$new/"
    rm -rf "$old"
  fi
  mkdir -p "$(dirname "$old")"
  ln -s "$NEW_KUBELET" "$old"
  log "moved $KUBELET_DIR to $NEW_KUBELET (symlink left in place)"
  if [ "$was_active" = 1 ]; then systemctl start kubelet; fi
}

log "start $(date --iso-8601=seconds) on $(hostname)"

mounted=0
for _ in $(seq 1 "$TRIES"); do
  if is_mounted "$DATA"; then mounted=1; break; fi
  log "waiting for $DATA to be mounted"
  sleep 5
done

if [ "$mounted" = 1 ]; then
  log "secondary EBS volume is mounted at $DATA"
  os_id=""
  os_version=""
  if [ -r "$ROOT/etc/os-release" ]; then
    os_id="$(sed -n 's/^ID="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$ROOT/etc/os-release")"
    os_version="$(sed -n 's/^VERSION_ID="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$ROOT/etc/os-release")"
  fi
  case "$os_id-$os_version" in
    amzn-2) configure_al2 ;;
    amzn-2023) configure_al2023 ;;
    *) log "OS '$os_id $os_version' is neither Amazon Linux 2 nor 2023; leaving containerd alone" ;;
  esac
  move_kubelet
else
  log "$DATA is not mounted; keeping containerd and the kubelet on the root volume"
fi

log "done $(date --iso-8601=seconds)"
