#!/bin/sh
# The kernel lab's /init: mounts what the run reads, runs /lab/run.sh (the
# per-run archive `blklab kernel run` appends: the job, the devices, the
# queue settings), and powers the guest off whatever happens.
#
# The run's output goes to the second serial port (/dev/ttyS1), the kernel's
# console to the first; each part of the output is framed by
#   @@blklab-begin NAME@@ ... @@blklab-end NAME@@
# and the last line is @@blklab-exit N@@ with run.sh's exit status.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
out=/dev/ttyS1
stty -F "$out" raw -echo 2>/dev/null
if [ -x /lab/run.sh ]; then
  /lab/run.sh >"$out" 2>&1
  status=$?
else
  echo "no /lab/run.sh in the image" >"$out"
  status=127
fi
echo "@@blklab-exit $status@@" >"$out"
sync
poweroff -f
