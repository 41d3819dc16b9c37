#!/usr/bin/env bash
# Faults on real members (issue 19, acceptance 3 to 5), each asserting its
# outcome. A RAID-5 of four 64 MiB members, chunk 64 KiB; the faulty member
# d3 is a file exported by nbdkit and seen as a file through nbdfuse.
#
#   read-range  d3 is served by nbdkit's sh plugin (tests/.. below) whose
#               reads fail with EIO on one 64 KiB range (16 blocks of 4 KiB,
#               a data chunk of stripe 65) while marker files exist; a write
#               over a whole block heals it (as a disk remaps a sector on
#               write). Reading the whole array back returns the right data,
#               `detail --json` counts corrected read errors on member 3,
#               which stays active; once the range heals, `check` finds 0
#               mismatches. (nbdkit's error filter fails every request, not
#               a range, and its ddrescue filter is read-only: hence sh.)
#   hang        d3 behind nbdkit's pause filter; serve --member-timeout-s 10;
#               once 64 MiB are in, d3 is paused (its requests hang) and
#               64 MiB of new data are copied: member 3 is failed for the timeout, the
#               copy completes, nothing takes longer than the timeout plus
#               10 s, the data reads back equal, and serve stops cleanly.
#   superblock  d2's superblock slots (its first 128 KiB) overwritten with
#               random bytes: serve names d2 and why, serves degraded, and
#               the data reads back equal.
#
# usage: scripts/fault-injection.sh read-range|hang|superblock   (root, for FUSE)
set -euo pipefail
mode=${1:?usage: $0 read-range|hang|superblock}
case "$mode" in read-range | hang | superblock) ;; *) echo "unknown mode $mode" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")/.." && pwd)
eraid=${ERAID:-$here/target/release/eraid}
for tool in nbdkit nbdfuse nbdcopy jq fusermount3 python3; do
  command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 2; }
done
[ -x "$eraid" ] || { echo "no eraid binary at $eraid (cargo build --release -p eraid-cli)" >&2; exit 2; }

fail() { echo "FAIL ($mode): $*" >&2; exit 1; }

wait_for() { # wait_for SECONDS TEST...
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/eraid-faults.XXXXXX")
serve_pid=
fuse_pid=
cleanup() {
  [ -n "$serve_pid" ] && kill -9 "$serve_pid" 2>/dev/null || true
  [ -S "$dir/pause.sock" ] && pause_control r >/dev/null 2>&1 || true
  fusermount3 -u -z "$dir/m" 2>/dev/null || true
  [ -f "$dir/kit.pid" ] && kill "$(cat "$dir/kit.pid")" 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT
cd "$dir"

# pause_control p|r: pause or resume nbdkit's pause filter (waits for the ack).
pause_control() {
  python3 - "$dir/pause.sock" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode())
s.settimeout(60)
print(s.recv(1).decode())
EOF
}

start_member() { # start_member NBDKIT-ARGS...: nbdkit + nbdfuse for d3
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

serve() { # serve [OPTIONS] MEMBERS...
  "$eraid" serve --socket "$dir/nbd.sock" --control "$dir/ctl.sock" "$@" >>"$dir/serve.log" 2>&1 &
  serve_pid=$!
  wait_for 20 test -S "$dir/ctl.sock" -a -S "$dir/nbd.sock" || fail "serve did not start: $(cat "$dir/serve.log")"
}

stop_serve() { # stop_serve [SECONDS]: SIGTERM, and it must exit 0 within SECONDS
  kill -TERM "$serve_pid" 2>/dev/null || true
  wait_for "${1:-60}" bash -c "! kill -0 $serve_pid 2>/dev/null" || fail "serve did not stop within ${1:-60} s"
  local rc=0
  wait "$serve_pid" || rc=$?
  serve_pid=
  [ "$rc" = 0 ] || fail "serve exited $rc: $(tail -5 "$dir/serve.log")"
  rm -f "$dir/ctl.sock" "$dir/nbd.sock"
}

status() { "$eraid" detail --json --control "$dir/ctl.sock"; }

activity_settled() { # no check or resync running (e.g. the first start's resync)
  wait_for 300 bash -c "'$eraid' detail --json --control '$dir/ctl.sock' | jq -e '.activity == null or .activity.state == \"done\"' >/dev/null" ||
    fail "the resync or check did not finish: $(status | jq -c .activity)"
}

copy_in() { nbdcopy --flush "$1" "nbd+unix:///?socket=$dir/nbd.sock" 2>copy.log || fail "the copy failed: $(cat copy.log)"; }

read_back_equal() { # read_back_equal WHAT BYTES
  rm -f back
  nbdcopy "nbd+unix:///?socket=$dir/nbd.sock" back || fail "$1: read back failed"
  cmp -n "$2" data back >/dev/null || fail "$1: data read back differs"
}

case "$mode" in
read-range)
  truncate -s 64M d3.img
  mkdir bad
  # Member 3's chunk of stripe 65 (a data chunk in the left-symmetric
  # layout), after the 1 MiB metadata area.
  first_block=$(((1048576 + 65 * 65536) / 4096))
  cat >member.sh <<EOF
#!/usr/bin/env bash
img=$dir/d3.img; bad=$dir/bad; log=$dir/bad-reads.log
EOF
  cat >>member.sh <<'EOF'
case "$1" in
  get_size) stat -c %s "$img" ;;
  can_write | can_flush) exit 0 ;;
  flush) exit 0 ;;
  pread)
    first=$(($4 / 4096)); last=$((($4 + $3 - 1) / 4096))
    for marker in "$bad"/*; do
      [ -e "$marker" ] || continue
      b=${marker##*/}
      if [ "$b" -ge "$first" ] && [ "$b" -le "$last" ]; then
        echo "pread $3 bytes at $4: bad block $b" >>"$log"
        echo "EIO bad block $b" >&2
        exit 1
      fi
    done
    dd if="$img" iflag=skip_bytes,count_bytes skip="$4" count="$3" status=none ;;
  pwrite)
    dd of="$img" oflag=seek_bytes seek="$4" conv=notrunc bs=128K iflag=fullblock status=none
    # A block written whole reads again (a remapped sector).
    for marker in "$bad"/*; do
      [ -e "$marker" ] || continue
      b=${marker##*/}
      if [ $((b * 4096)) -ge "$4" ] && [ $(((b + 1) * 4096)) -le $(($4 + $3)) ]; then rm -f "$marker"; fi
    done ;;
  *) exit 2 ;;
esac
EOF
  chmod +x member.sh
  head -c 100M /dev/urandom >data
  start_member sh "$dir/member.sh"
  "$eraid" create --level 5 --chunk 64K --size 64M d0 d1 d2 m/d3 >create.log
  serve d0 d1 d2 m/d3
  copy_in data
  activity_settled # the first start's resync, so that the user's read meets the bad range
  stop_serve
  # Remount (no page cache of d3 left), then the range goes bad.
  stop_member
  for b in $(seq "$first_block" $((first_block + 15))); do touch "bad/$b"; done
  start_member sh "$dir/member.sh"
  serve d0 d1 d2 m/d3
  read_back_equal "read with member 3's range failing" $((100 << 20))
  [ -s bad-reads.log ] || fail "no read hit the bad range (the fault was not injected)"
  status >after.json
  jq -e '.members[3].state == "active"' after.json >/dev/null || fail "member 3 is not active: $(jq -c '.members[3]' after.json)"
  corrected=$(jq '.members[3].read_errors_corrected' after.json)
  [ "$corrected" -ge 1 ] || fail "no corrected read error counted: $(jq -c '.members[3]' after.json)"
  # The range heals (what the rewrites did not already heal), then check.
  rm -f bad/*
  activity_settled
  "$eraid" check --control "$dir/ctl.sock" >check.log 2>&1 || fail "check: $(cat check.log)"
  grep -q "^0 mismatches" check.log || fail "check: $(cat check.log)"
  stop_serve
  stop_member
  echo "read-range: $(wc -l <bad-reads.log) reads hit the bad range; 100 MiB read back equal; member 3 active with $corrected corrected read errors; check 0 mismatches"
  ;;
hang)
  truncate -s 64M d3.img
  head -c 64M /dev/urandom >data
  start_member --filter=pause file d3.img pause-control="$dir/pause.sock"
  "$eraid" create --level 5 --chunk 64K --size 64M d0 d1 d2 m/d3 >create.log
  timeout_s=10
  serve --member-timeout-s "$timeout_s" d0 d1 d2 m/d3
  copy_in data
  [ "$(pause_control p)" = P ] || fail "the pause filter did not pause"
  started=$SECONDS
  # New data over all of it: d3's writes hang.
  head -c 64M /dev/urandom >data2
  nbdcopy --flush data2 "nbd+unix:///?socket=$dir/nbd.sock" 2>copy.log &
  copy_pid=$!
  wait_for $((timeout_s + 10)) bash -c "! kill -0 $copy_pid 2>/dev/null" ||
    fail "the copy hung past the timeout + 10 s: $(status | jq -c '.members[3]')"
  elapsed=$((SECONDS - started))
  wait "$copy_pid" || fail "the copy failed: $(cat copy.log)"
  status >after.json
  jq -e '.members[3].state == "faulty"' after.json >/dev/null || fail "member 3 not failed: $(jq -c '.members[3]' after.json)"
  jq -e '.members[3].failure | test("member timeout")' after.json >/dev/null ||
    fail "member 3's failure does not name the timeout: $(jq -c '.members[3]' after.json)"
  mv data2 data
  read_back_equal "read while member 3 hangs" $((64 << 20))
  # SIGTERM: the array closes (flushes the members left, marks them
  # clean) within the bound. The process then closes its files: closing
  # the hung FUSE file waits in the kernel for nbdfuse, which waits for
  # the paused nbdkit, so it can exit only once d3 answers again.
  kill -TERM "$serve_pid"
  wait_for $((timeout_s + 10)) grep -q "stopped cleanly" serve.log ||
    fail "the array did not close within the timeout + 10 s: $(tail -5 serve.log)"
  [ "$(pause_control r)" = R ] || fail "the pause filter did not resume"
  stop_serve 30
  stop_member
  echo "hang: copy done in ${elapsed} s with member 3 hung; member 3 failed for the member timeout (${timeout_s} s); 64 MiB equal; serve stopped cleanly"
  ;;
superblock)
  head -c 100M /dev/urandom >data
  "$eraid" create --level 5 --chunk 64K --size 64M d0 d1 d2 d3 >create.log
  serve d0 d1 d2 d3
  copy_in data
  stop_serve
  head -c 128K /dev/urandom | dd of=d2 conv=notrunc status=none
  serve d0 d1 d2 d3
  grep -q "left out .*d2: .*not an eraid member" serve.log || fail "serve does not name d2 and why: $(cat serve.log)"
  status >after.json
  jq -e '.degraded == true' after.json >/dev/null || fail "not degraded: $(jq -c . after.json)"
  read_back_equal "degraded read" $((100 << 20))
  stop_serve
  echo "superblock: serve named d2 ($(grep -o 'left out .*' serve.log | head -1 | cut -c1-120)), served degraded, 100 MiB equal"
  ;;
esac
