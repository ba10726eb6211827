#!/usr/bin/env bash
# gpu-check.sh: check gpuwatch on a real NVIDIA GPU.
#
# Usage: scripts/gpu-check.sh ./gpuwatch   (a built binary; needs the NVIDIA
# driver and python3 with PyTorch on this machine)
#
# It runs `gpuwatch status`, then a 2-minute `gpuwatch run` while a PyTorch
# process grows its GPU memory step by step, and checks that gpuwatch saw the
# memory, the utilization, the process (PID, user, command) and fired the leak
# alert. Exit 0 when every check passes.
set -uo pipefail

bin=${1:-./gpuwatch}
[ -x "$bin" ] || { echo "usage: $0 PATH-TO-GPUWATCH-BINARY" >&2; exit 2; }
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
  || { echo "gpu-check: python3 with PyTorch and a CUDA GPU is needed" >&2; exit 2; }

work=$(mktemp -d)
trap 'kill $leaker $watcher 2>/dev/null; rm -rf "$work"' EXIT
failures=0
check() { # check NAME COMMAND...: run the command, report PASS/FAIL
  local name=$1; shift
  if "$@"; then echo "PASS $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

echo "== gpuwatch status"
"$bin" status | tee "$work/status.txt"
check "status shows GPU 0 with its memory" grep -q '^GPU 0 ' "$work/status.txt"
check "status shows a memory bar" grep -q 'memory  \[' "$work/status.txt"

# The leak: a PyTorch process that allocates 1 GiB every 2 s, computing on
# each block so utilization is non-zero, for 100 s (50 GiB at most).
cat > "$work/leak.py" <<'PY'
import time, torch
blocks = []
end = time.time() + 100
while time.time() < end:
    if len(blocks) < 50:
        blocks.append(torch.ones(256, 1024, 1024, device="cuda"))  # 1 GiB
    x = torch.randn(4096, 4096, device="cuda")
    for _ in range(20):
        x = x @ x
        x = x / x.norm()
    torch.cuda.synchronize()
    time.sleep(2)
PY

# Rules with windows short enough for a 2-minute run.
cat > "$work/config.yaml" <<YAML
host: gpu-check
source: {type: nvml, interval: 1s}
rules:
  - alert: CheckMemoryLeak
    when: slope(memory.used, 1m) > 10GiB/min and memory.used > 4GiB
    for: 10s
    severity: warning
  - alert: CheckBusy
    when: utilization.gpu > 0 and process.count >= 1
    for: 5s
    severity: info
YAML
check "config is valid" "$bin" check --config "$work/config.yaml"

python3 "$work/leak.py" & leaker=$!
timeout 125 "$bin" run --config "$work/config.yaml" --log-level info > "$work/run.out" 2> "$work/run.err" & watcher=$!
sleep 60
"$bin" status | tee "$work/status-during.txt"
wait $leaker
wait $watcher
cat "$work/run.out"; tail -n 5 "$work/run.err"

me=$(id -un)
check "status saw the PyTorch process (pid $leaker)" grep -q "pid $leaker " "$work/status-during.txt"
check "status attributed it to $me and python" grep -E "pid $leaker +$me .*python" "$work/status-during.txt" -q
check "status showed memory in use" grep -Eq 'memory  \[█' "$work/status-during.txt"
check "the leak alert fired" grep -q 'FIRING .*CheckMemoryLeak' "$work/run.out"
check "the leak alert named the process" grep -A4 'FIRING .*CheckMemoryLeak' "$work/run.out" -q -e "pid $leaker"
check "utilization was seen (CheckBusy fired)" grep -q 'FIRING .*CheckBusy' "$work/run.out"
check "alerts resolved when the process ended" grep -q 'RESOLVED .*CheckBusy' "$work/run.out"

echo "gpu-check: $failures failed"
[ "$failures" -eq 0 ]
