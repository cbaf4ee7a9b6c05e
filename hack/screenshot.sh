#!/usr/bin/env bash
# Captures the real binary's TUI on the demo at 160x45 (NO_COLOR) in tmux, mid-evacuation, and
# puts it in README.md between its screen markers: `make screenshot` keeps the picture current.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tmux >/dev/null || { echo "screenshot: tmux is needed (apt-get install tmux)" >&2; exit 2; }
bin=$(mktemp -d)/drainctl
go build -o "$bin" .
s=drainctl-screenshot-$$
trap 'tmux kill-session -t "$s" 2>/dev/null || true' EXIT
tmux new-session -d -s "$s" -x 160 -y 45 "env NO_COLOR=1 TERM=xterm-256color $bin --demo; sleep 60"
screen() { tmux capture-pane -p -t "$s"; }
until screen | grep -q "compute-4"; do sleep 0.5; done
# The cursor to compute-4, evacuate it, run the plan; captured while its VMs move.
tmux send-keys -t "$s" / ; sleep 0.3; tmux send-keys -t "$s" -l compute-4; tmux send-keys -t "$s" Enter; sleep 0.5
tmux send-keys -t "$s" e; sleep 2; tmux send-keys -t "$s" y
for _ in $(seq 1 40); do screen | grep -q "running " && break; sleep 0.5; done
sleep 12
shot=$(screen | sed -e 's/[[:space:]]*$//')
python3 - "$shot" <<'PY'
import re, sys
shot = sys.argv[1].rstrip('\n')
readme = open('README.md').read()
block = '<!-- screen: make screenshot -->\n```\n' + shot + '\n```\n<!-- /screen -->'
new, n = re.subn(r'<!-- screen: make screenshot -->.*?<!-- /screen -->', lambda _: block, readme, flags=re.S)
if n != 1:
    sys.exit('screenshot: README.md has no screen markers')
open('README.md', 'w').write(new)
PY
echo "screenshot: README.md's screen updated"
