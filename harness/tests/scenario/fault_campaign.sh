#!/usr/bin/env bash
# fault_campaign.sh - the short fault campaign (CI): every simulator fault
# alone, some combinations, one seed, one controller SIGKILL, a full results
# volume, a read-only database, a locked database and a wall-clock jump, each
# followed by the campaign's assertions (harness/tests/helpers/fault_campaign.sh,
# docs/reliability.md); first a console flood (bench/soak.sh --flood-only).
# The full campaign is the helper without --short.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
command -v sqlite3 >/dev/null || { echo "SKIP: sqlite3 not installed"; exit 77; }
# a board that prints without end: controller memory flat, transcript within its cap
bash "$EMMCLAB_SRC/bench/soak.sh" --flood-only --flood-seconds 6
exec bash "$EMMCLAB_SRC/harness/tests/helpers/fault_campaign.sh" --short
