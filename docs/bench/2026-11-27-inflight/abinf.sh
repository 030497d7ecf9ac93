#!/bin/bash
# abinf.sh: MaxInflightBatches 1 vs 2 (zkd-inf, ZKD_EXP_INFLIGHT), 3 members then standalone, alternating, R rounds
R=${R:-3}
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq $R); do
  for k in 2 1; do
    for wl in set create lock; do
      ZKD_EXP_INFLIGHT=$k /var/tmp/b29/e3.sh /var/tmp/b29/zkd-inf $wl 16 6s | sed "s/^zkd-inf   /e3 inf=$k /"
    done
  done
done
for r in $(seq $R); do
  for k in 2 1; do
    ZKD_EXP_INFLIGHT=$k W="create set" /var/tmp/zb/ab.sh /var/tmp/b29/zkd-inf | grep -v load | sed "s/^zkd-inf   /s1 inf=$k /"
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
