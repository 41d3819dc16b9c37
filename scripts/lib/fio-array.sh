# Sourced (not run) by scripts/ab-fio.sh, profile-system.sh and
# cpu-per-gib.sh: the server they drive with fio. A fresh array of four
# 128 MiB tmpfs members (64 KiB chunks) served over a Unix socket, or
# `nbdkit memory` as the baseline, filled by one sequential 1M pass so
# reads touch real pages.
#
#   serve_filled NAME BIN LEVEL
#
# NAME prefixes error messages and the temporary directory; LEVEL is 0, 5,
# 6 or 10, `5-degraded` or `6-degraded` (that level, served without its
# last member, so reads and writes of its chunks rebuild them from the
# others), `0-nbd` (RAID-0 whose four members are `nbdkit memory` exports
# on Unix sockets, for eraid's member client), or `nbdkit` (BIN then
# unused). Leaves the shell in the
# directory, sets W (the directory), P (the server's pid) and URI, and
# stops the server and removes the directory when the shell exits. An
# eraid server also answers `eraid detail --control "$W/c.sock"`; its
# `create` and `serve` are given the flags in ERAID_CREATE_FLAGS and
# ERAID_SERVE_FLAGS too (each split on spaces; paths are relative to W).

fio_array_cleanup() {
  local pid
  for pid in ${P:-} ${MEMBER_PIDS[@]+"${MEMBER_PIDS[@]}"}; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  [ -n "${W:-}" ] && rm -rf "$W"
}

serve_filled() {
  local name=$1 bin=$2 level=$3
  W=$(mktemp -d "/dev/shm/eraid-$name.XXXXXX")
  P=
  trap fio_array_cleanup EXIT
  cd "$W"
  if [ "$level" = nbdkit ]; then
    command -v nbdkit >/dev/null || { echo "$name: nbdkit is not installed" >&2; exit 1; }
    nbdkit -f -U "$W/s.sock" memory 512M >/dev/null 2>&1 & P=$!
  else
    local members=(a b c d)
    MEMBER_PIDS=()
    if [ "$level" = 0-nbd ]; then
      command -v nbdkit >/dev/null || { echo "$name: nbdkit is not installed" >&2; exit 1; }
      members=()
      local m
      for m in a b c d; do
        nbdkit -f -U "$W/member-$m.sock" memory 128M >/dev/null 2>&1 & MEMBER_PIDS+=($!)
        members+=("nbd+unix:///?socket=$W/member-$m.sock")
      done
      for m in a b c d; do
        for _ in $(seq 200); do [ -S "$W/member-$m.sock" ] && break; sleep 0.05; done
        [ -S "$W/member-$m.sock" ] || { echo "$name: nbdkit member $m did not start" >&2; exit 1; }
      done
      level=0
    fi
    # ERAID_CREATE_FLAGS (split on spaces): more `create` flags, e.g.
    # "--journal j --cache msc-ct --cache-size 256M --no-tune".
    local create_extra=()
    read -r -a create_extra <<<"${ERAID_CREATE_FLAGS:-}"
    "$bin" create --level "${level%-degraded}" --chunk 64K --size 128M "${create_extra[@]}" "${members[@]}" >/dev/null
    if [ "$level" != "${level%-degraded}" ]; then
      rm d
      members=(a b c)
    fi
    # ERAID_SERVE_FLAGS (split on spaces): more `serve` flags, e.g.
    # "--cache msc-ct --cache-size 512M".
    local extra=()
    read -r -a extra <<<"${ERAID_SERVE_FLAGS:-}"
    "$bin" serve --socket "$W/s.sock" --control "$W/c.sock" "${extra[@]}" "${members[@]}" >/dev/null 2>&1 & P=$!
  fi
  for _ in $(seq 200); do [ -S "$W/s.sock" ] && break; sleep 0.05; done
  [ -S "$W/s.sock" ] || { echo "$name: the server did not start" >&2; exit 1; }
  URI="nbd+unix:///?socket=$W/s.sock"
  fio --name=fill --ioengine=nbd --uri="$URI" --rw=write --bs=1M --iodepth=32 --size=360M \
    --output=/dev/null >/dev/null 2>&1
}
