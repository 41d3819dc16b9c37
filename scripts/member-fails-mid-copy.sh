#!/usr/bin/env bash
# A member whose writes start failing (EIO) while a client copies data in,
# as an administrator would meet it: RAID-5 of four 256 MiB members, the
# fourth a file exported by nbdkit's error and delay filters and seen as a
# file through nbdfuse. `eraid serve --control`, nbdcopy writes 100 MiB of
# random data, and half a second in the trigger file makes every write to the
# fourth member fail.
#
# MODE is what runs when the member fails:
#   plain   nothing but the copy (fresh members; issue 19's acceptance 2)
#   spare   nothing but the copy, with a hot spare d4 recorded: it takes
#           the failed member's slot, is rebuilt, and `check` then finds 0
#           mismatches (the restart step is skipped)
#   resync  the first start's resync (members held data before `create`)
#   alv     an online growth by ALV onto the fourth member
#   check   `eraid check --repair`
#
# Each run must: complete the copy, leave the fourth member not `active`
# (with the error in `detail --json`), read the 100 MiB back equal, say what
# the activity did, stop cleanly, and after a restart with all four members
# keep the fourth out and read the data back equal again.
#
# usage: scripts/member-fails-mid-copy.sh MODE [RUNS]   (needs root for FUSE)
set -euo pipefail
mode=${1:?usage: $0 plain|spare|resync|alv|check [RUNS]}
runs=${2:-1}
case "$mode" in plain | spare | resync | alv | check) ;; *) echo "unknown mode $mode" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
eraid=${ERAID:-$here/target/release/eraid}
for tool in nbdkit nbdfuse nbdcopy jq fusermount3; do
  command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 2; }
done
[ -x "$eraid" ] || { echo "no eraid binary at $eraid (cargo build --release -p eraid-cli)" >&2; exit 2; }

fail() { echo "FAIL ($mode, run $run): $*" >&2; exit 1; }

wait_for() { # wait_for SECONDS TEST...
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}

dir=
serve_pid=
fuse_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill -9 "$serve_pid" 2>/dev/null || true
  if [ -n "$dir" ]; then
    fusermount3 -u -z "$dir/m" 2>/dev/null || true
    [ -f "$dir/kit.pid" ] && kill "$(cat "$dir/kit.pid")" 2>/dev/null || true
    rm -rf "$dir"
  fi
}
trap cleanup EXIT

start_member() { # start_member FILTER-ARGS...: nbdkit + nbdfuse for d3
  nbdkit -U "$dir/kit.sock" -P "$dir/kit.pid" "$@"
  mkdir -p "$dir/m"
  nbdfuse "$dir/m/d3" --unix "$dir/kit.sock" 2>>"$dir/nbdfuse.log" &
  fuse_pid=$!
  wait_for 10 test -e "$dir/m/d3" || fail "nbdfuse did not mount"
}

stop_member() {
  fusermount3 -u "$dir/m" 2>/dev/null || fusermount3 -u -z "$dir/m"
  wait "$fuse_pid" 2>/dev/null || true
  local pid; pid=$(cat "$dir/kit.pid")
  kill "$pid"
  wait_for 10 bash -c "! kill -0 $pid 2>/dev/null" || fail "nbdkit did not exit"
  rm -f "$dir/kit.sock" "$dir/kit.pid"
}

serve() { # serve MEMBERS...
  "$eraid" serve --socket "$dir/nbd.sock" --control "$dir/ctl.sock" "$@" >>"$dir/serve.log" 2>&1 &
  serve_pid=$!
  wait_for 20 test -S "$dir/ctl.sock" -a -S "$dir/nbd.sock" || fail "serve did not start: $(cat "$dir/serve.log")"
}

stop_serve() {
  kill -TERM "$serve_pid"
  local rc=0
  wait "$serve_pid" || rc=$?
  serve_pid=
  [ "$rc" = 0 ] || fail "serve exited $rc: $(tail -5 "$dir/serve.log")"
}

status() { "$eraid" detail --json --control "$dir/ctl.sock"; }

read_back_equal() { # read_back_equal WHAT
  rm -f "$dir/back"
  nbdcopy "nbd+unix:///?socket=$dir/nbd.sock" "$dir/back" || fail "$1: read back failed"
  cmp -n $((100 << 20)) "$dir/data" "$dir/back" >/dev/null || fail "$1: data read back differs"
}

for run in $(seq "$runs"); do
  dir=$(mktemp -d "${TMPDIR:-/tmp}/eraid-member-fails.XXXXXX")
  cd "$dir"
  head -c 100M /dev/urandom >data
  truncate -s 256M d3.img
  [ "$mode" = spare ] && truncate -s 256M d4
  if [ "$mode" = resync ]; then
    # Members that held data: the first start resyncs the whole array.
    for i in 0 1 2; do head -c 8M /dev/urandom >d$i; truncate -s 256M d$i; done
    head -c 8M /dev/urandom | dd of=d3.img conv=notrunc status=none
  fi
  start_member --filter=error --filter=delay file d3.img delay-write=5ms delay-read=2ms \
    error-pwrite=EIO error-pwrite-rate=100% error-pwrite-file="$dir/TRIGGER"
  if [ "$mode" = alv ]; then
    "$eraid" create --level 5 --chunk 64K --size 256M d0 d1 d2 >create.log
    serve d0 d1 d2
    "$eraid" grow --add m/d3 --strategy alv --no-wait --control "$dir/ctl.sock" >grow.log
  elif [ "$mode" = plain ]; then
    "$eraid" create --level 5 --chunk 64K --size 256M d0 d1 d2 m/d3 >create.log
    serve d0 d1 d2 m/d3
  elif [ "$mode" = spare ]; then
    "$eraid" create --level 5 --chunk 64K --size 256M d0 d1 d2 m/d3 --spare d4 >create.log
    serve d0 d1 d2 m/d3 d4
  else
    "$eraid" create --level 5 --chunk 64K --size 256M --force d0 d1 d2 m/d3 >create.log
    serve d0 d1 d2 m/d3
  fi
  if [ "$mode" = check ]; then
    # The member files existed before create, so a resync runs first.
    wait_for 120 bash -c "[ \"\$('$eraid' detail --json --control '$dir/ctl.sock' | jq -r .activity.state)\" = done ]" ||
      fail "the first resync did not finish"
    "$eraid" check --repair --control "$dir/ctl.sock" >check.log 2>&1 &
  fi
  (
    sleep 0.5
    status >before.json
    touch "$dir/TRIGGER"
  ) &
  trigger_pid=$!
  nbdcopy --flush data "nbd+unix:///?socket=$dir/nbd.sock" 2>copy.log || fail "the copy failed: $(cat copy.log)"
  wait "$trigger_pid"
  # The activity must have been running when the member failed.
  case "$mode" in
    plain | spare) ;;
    resync | check) want=$([ "$mode" = resync ] && echo resync || echo check)
      [ "$(jq -r .activity.kind before.json)/$(jq -r .activity.state before.json)" = "$want/running" ] ||
        fail "the $want was not running at the trigger: $(jq -c .activity before.json)" ;;
    alv) [ "$(jq -r .reshape.state before.json)" = running ] ||
      fail "the growth was not running at the trigger: $(jq -c .reshape before.json)" ;;
  esac
  read_back_equal "served"
  # The activity may still be finishing its degraded walk.
  wait_for 120 bash -c "'$eraid' detail --json --control '$dir/ctl.sock' | jq -e '.activity == null or .activity.state == \"done\"' >/dev/null" ||
    fail "the activity did not finish"
  status >after.json
  if [ "$mode" = spare ]; then
    # The spare took slot 3 over and was rebuilt from the others.
    wait_for 300 bash -c "'$eraid' detail --json --control '$dir/ctl.sock' | jq -e '.rebuild.state == \"done\"' >/dev/null" ||
      fail "the rebuild onto the spare did not finish: $(status | jq -c .rebuild)"
    status >after.json
    jq -e '.members[3].state == "active" and (.members[3].path | endswith("d4"))' after.json >/dev/null ||
      fail "the spare d4 does not serve slot 3: $(jq -c '.members' after.json)"
    "$eraid" check --control "$dir/ctl.sock" >check.log 2>&1 || fail "check after the rebuild: $(cat check.log)"
    grep -q "0 mismatches" check.log || fail "check after the rebuild: $(cat check.log)"
    read_back_equal "after the rebuild onto the spare"
    stop_serve
    stop_member
    echo "run $run ($mode): copy complete, member 3 failed, spare d4 rebuilt in its place, check 0 mismatches, 100 MiB equal"
    cd /
    rm -rf "$dir"
    dir=
    continue
  fi
  state=$(jq -r '.members[3].state' after.json)
  [ "$state" != active ] || fail "member 3 is still active: $(jq -c .members after.json)"
  jq -e '.members[3].failure | test("Input/output error")' after.json >/dev/null ||
    fail "member 3's failure does not name the error: $(jq -c '.members[3]' after.json)"
  if [ "$mode" = plain ]; then
    said="no activity"
  elif [ "$mode" = alv ]; then
    said=$(jq -r '.reshape.pause_reason // ""' after.json)
  else
    said=$(jq -r '.activity.on_member_failure // ""' after.json)
  fi
  [ -n "$said" ] || fail "the activity does not say what it did about the failure: $(jq -c '.activity, .reshape' after.json)"
  stop_serve
  if grep -qiE "overflow|panicked" serve.log; then fail "serve log: $(grep -iE 'overflow|panicked' serve.log)"; fi
  # Restart with all four members (the fourth now healthy): it stays out.
  # Serving degraded needs the operator's word: regions the resync could
  # not finish await a rebuild, and a paused growth cannot finish without it.
  stop_member
  rm -f TRIGGER
  start_member file d3.img
  serve --allow-dirty-degraded --allow-degraded-growth d0 d1 d2 m/d3
  restarted=$(status | jq -r '.members[3].state')
  [ "$restarted" != active ] || fail "after a restart member 3 came back as current"
  read_back_equal "after restart"
  stop_serve
  stop_member
  echo "run $run ($mode): copy complete, member 3 $state ($said), 100 MiB equal; after restart member 3 $restarted, data equal"
  cd /
  rm -rf "$dir"
  dir=
done
