# Sourced by bench/pcap-locality.sh and bench/pcap-locality-suricata.sh:
# sets I1, D1, L2 and LLC to this machine's caches as cachegrind's
# --I1/--D1/--LL take them ("bytes,ways,line"), from the sysfs entries of
# cpu0 (index*/level, type, size, ways_of_associativity,
# coherency_line_size). LLC is the level-3 cache, or the L2 without one.
# shellcheck shell=bash disable=SC2034
cache() { # LEVEL TYPE -> "bytes,ways,line"
  local d
  for d in /sys/devices/system/cpu/cpu0/cache/index*; do
    if [ "$(cat "$d/level")" = "$1" ] && [ "$(cat "$d/type")" = "$2" ]; then
      local size ways line
      size="$(cat "$d/size")"; ways="$(cat "$d/ways_of_associativity")"
      line="$(cat "$d/coherency_line_size")"
      case "$size" in *K) size=$(( ${size%K} * 1024 )) ;; *M) size=$(( ${size%M} * 1048576 )) ;; esac
      echo "$size,$ways,$line"; return 0
    fi
  done
  return 1
}
I1="$(cache 1 Instruction)"
D1="$(cache 1 Data)"
L2="$(cache 2 Unified)"
LLC="$(cache 3 Unified || cache 2 Unified)"
