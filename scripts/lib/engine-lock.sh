# Sourced (not run) by scripts/bench-fio.sh and cpu-per-gib.sh: how much of
# a stretch of time a running `eraid serve --control` held its engine lock.
#
#   engine_lock_times ERAID CONTROL_SOCKET   # "held_s waited_s uptime_s"
#   engine_lock_share BEFORE AFTER FIELD     # FIELD 1 held, 2 waited

engine_lock_times() {
  "$1" detail --json --control "$2" |
    jq -r '.engine_lock | "\(.held_s) \(.waited_s) \(.uptime_s)"'
}

# The change of field FIELD over the change of uptime between two answers
# of engine_lock_times. The fields are estimates scaled by the sampled
# share of acquisitions, which moves a little between two answers: a
# change within that noise of zero can come out just below it, and is
# shown as zero.
engine_lock_share() {
  awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { split(a, x, " "); split(b, y, " ");
    d = y[3] - x[3]; v = d > 0 ? (y[f] - x[f]) / d : 0; printf "%.4f", (v > 0 ? v : 0) }'
}
