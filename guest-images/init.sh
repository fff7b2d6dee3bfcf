#!/bin/busybox sh
# shellcheck shell=sh
# manarig guest agent: PID 1 of the initramfs (busybox sh, named as such:
# selftest runs make /bin/sh bash, the shell of Python's `shell=True`, since
# Debian's busybox runs its own applets before any program on PATH and the
# tests want iproute2's `ip`, iputils' `ping`, …).
#
# 1. mounts proc, sysfs, devtmpfs (no udev, no irqbalance unless asked for:
#    nothing moves IRQs but the kernel and the driver); with `manarig.pin=CPULIST` it first pins
#    itself, and so every process it starts, to those CPUs;
# 2. when the kernel command line says `manarig.load=mana`, loads the modules
#    listed in /lib/modules/manarig/order, the last one (mana) in the BACKGROUND:
#    init_module() runs the PCI probe synchronously, so a foreground insmod
#    would only return after probe, and on a failed probe the driver has freed
#    its IRQs by then;
# 3. waits (deadline `manarig.deadline=SECONDS` after mana's insmod starts,
#    default 180) for
#    the probe to end (insmod returned: mana probes synchronously); brings the
#    netdev up (`manarig.ifup=0` skips it: Linux 7.x creates the queue EQs, and
#    so first fires the queue vectors, only in ndo_open); then waits for every
#    mana MSI-X vector to have fired once (on x86 without interrupt remapping an
#    affinity change is applied when the vector next fires, so
#    effective_affinity_list only means something after that: see
#    docs/rig-pitfalls.md, "effective_affinity_list lags behind smp_affinity_list");
#    `manarig.channels=N` then runs `ethtool -L <netdev> combined N` (Debian's
#    ethtool, in the initramfs with its libraries when the rig provides it);
# 4. with `manarig.addr=A.B.C.D/P`, adds that address to the netdev; with
#    `manarig.traffic=IP:PORT` also reads the NIC's IRQ counts, the NET_RX and
#    NET_TX softirqs and `ethtool -S`'s per-queue counters, pings the peer,
#    runs `manarig-flows guest` against it (the flows the rig planned), and
#    reads the counters again;
# 5. prints the report between MANARIG-REPORT-BEGIN <version> and
#    MANARIG-REPORT-END, one `key: value` line per item, on the console or, with
#    `manarig.report=ttyS1`, on the second serial port (no kernel message can
#    interleave there); with `manarig.reprobe=1` it first prints the state as a
#    stage (MANARIG-STAGE-BEGIN first-probe ... MANARIG-STAGE-END), reads every
#    /proc/irq/*/affinity_hint, runs `rmmod mana`, reads them again, loads mana
#    again and repeats step 3 before the report;
#    with `manarig.debug=1` (debug kernels: KASAN, kmemleak, lockdep) it mounts
#    debugfs, has kmemleak scan between the loads (--reprobe) and before the
#    report, and reports kmemleak's suspected leaks and the kernel log's KASAN,
#    lockdep, WARN and BUG reports;
#    with `manarig.unload=1` (runs with fault injection, debug runs) it then
#    prints MANARIG-UNLOAD, waits for the host's go-ahead (MANARIG-GO, once the
#    rig has read the device's queues; at most UNLOAD_GO_WAIT seconds), runs
#    `rmmod mana` in the background and waits for it until the deadline
#    (`unload: hung` if it has not returned), so that the report says whether
#    the driver still unloads and its messages include the unload's;
#    with `manarig.offline=CPULIST` the CPUs go offline (sysfs) before mana
#    loads; with `manarig.offline_after=CPULIST` / `manarig.online_after=CPULIST`
#    the probe's state is printed as stage `probe`, those CPUs go offline (then
#    the state is stage `offline-after` when onlining follows) and online, one by
#    one in ascending order, and the report shows the state after the last step;
# 6. powers off.
#
# The protocol (command-line items, markers, report lines, versions) is written
# down in guest-images/README.md and parsed by harness/crates/guest/src/guest_protocol/.
#
# Waiting is by polling the event's evidence (/proc, /sys) at a short interval
# against a deadline: the guest has no inotify on procfs, and each check is the
# event itself (process gone, netdev present, counter non-zero), not a guess.

export PATH=/bin:/sbin
# The report's format version (guest-images/README.md, "Versions"): raise it
# when a line the host reads changes its shape or meaning or goes away.
PROTOCOL_VERSION=3
# R: the folder the agent's paths are below, empty in the guest. The host's
# tests (harness/crates/guest/src/guest_protocol/agent_tests.rs) set
# MANARIG_AGENT_ROOT to a fake /proc and /sys tree and MANARIG_AGENT_LIB=1:
# sourced that way this file only defines its functions and defaults (`main`,
# at the end, runs the steps above), which they run under the provisioned
# busybox and parse with the host's parser.
R=${MANARIG_AGENT_ROOT-}

# Under TCG a fork costs milliseconds of the guest's only busy vCPU time, so
# the waits and stamps below use shell builtins only: `$(…)` and `sleep` fork.
# UP = seconds of uptime now.
up() { read -r UP _ < "$R"/proc/uptime; }

LOAD=
DEADLINE=180
POLL=0.02
# PCI vendor[:device] of the NIC to report: vendor 0x1414 is Microsoft's
# (include/linux/pci_ids.h PCI_VENDOR_ID_MICROSOFT); another value lets the rig
# test the report path with a device that has a built-in driver (e.g. QEMU's
# NVMe, 0x1b36:0x0010).
NIC_ID=0x1414
IFUP=1
CHANNELS=
REPROBE=0
DEBUG=0
PIN=
REPORT=
ADDR=
TRAFFIC=
UNLOAD=0
# Guest seconds the final rmmod (manarig.unload=1) may take, at the least:
# mana_dealloc_queues() itself waits up to 120 s for TX completions a device
# that forgot its queues (--inject reset@S) never sends, then the HWC requests
# of the remove path time out one by one.
UNLOAD_WAIT=180
# Guest seconds the final unload waits at its mark for the host's go-ahead
# (guest-images/README.md, "Markers"): the host answers once it has the
# device's status, which it waits for at most 5 s (ANSWER_DEADLINE in
# harness/crates/rig/src/rig/device.rs); a host that does not answer (one from
# before the handshake) costs this long, then the rmmod runs all the same.
UNLOAD_GO_WAIT=10
CARRIER_UNLOAD=
OFFLINE=
OFFLINE_AFTER=
ONLINE_AFTER=
IRQBALANCE=
SELFTESTS=
SELFTEST_TIMEOUT=600
SELFTEST_SLACK=
SOAK=
SOAK_CHANNELS=
# kmemleak's scans: - (not a debug run), absent, disabled, or the scans done.
KMEMLEAK=-
# The `manarig.*` items of the kernel command line (guest-images/README.md).
parse_cmdline() {
	read -r CMDLINE < "$R"/proc/cmdline
	for arg in $CMDLINE; do
		case "$arg" in
		manarig.load=*) LOAD=${arg#manarig.load=} ;;
		manarig.deadline=*) DEADLINE=${arg#manarig.deadline=} ;;
		manarig.poll=*) POLL=${arg#manarig.poll=} ;;
		manarig.nic=*) NIC_ID=${arg#manarig.nic=} ;;
		manarig.ifup=*) IFUP=${arg#manarig.ifup=} ;;
		manarig.channels=*) CHANNELS=${arg#manarig.channels=} ;;
		manarig.reprobe=*) REPROBE=${arg#manarig.reprobe=} ;;
		manarig.debug=*) DEBUG=${arg#manarig.debug=} ;;
		manarig.pin=*) PIN=${arg#manarig.pin=} ;;
		manarig.report=*) REPORT=${arg#manarig.report=} ;;
		manarig.addr=*) ADDR=${arg#manarig.addr=} ;;
		manarig.traffic=*) TRAFFIC=${arg#manarig.traffic=} ;;
		manarig.unload=*) UNLOAD=${arg#manarig.unload=} ;;
		manarig.offline=*) OFFLINE=${arg#manarig.offline=} ;;
		manarig.offline_after=*) OFFLINE_AFTER=${arg#manarig.offline_after=} ;;
		manarig.online_after=*) ONLINE_AFTER=${arg#manarig.online_after=} ;;
		manarig.irqbalance=*) IRQBALANCE=${arg#manarig.irqbalance=} ;;
		manarig.selftests=*) SELFTESTS=${arg#manarig.selftests=} ;;
		manarig.selftest_timeout=*) SELFTEST_TIMEOUT=${arg#manarig.selftest_timeout=} ;;
		manarig.selftest_slack=*) SELFTEST_SLACK=${arg#manarig.selftest_slack=} ;;
		manarig.soak=*) SOAK=${arg#manarig.soak=} ;;
		manarig.soak_channels=*) SOAK_CHANNELS=${arg#manarig.soak_channels=} ;;
		esac
	done
}


# The deadline (DEADLINE_AT) counts from the start of mana's insmod
# (load_and_probe; from /init's start until then): a guest's clock runs on
# while a starved host runs its vCPUs little, and a big or starved TCG guest
# may take minutes to get there (an arm64 guest of 16 vCPUs beside other
# guests on 2 host cores reached mana's insmod at 142 s of its clock, 7.9 s
# on a quiet host).
past_deadline() { up; [ "${UP%.*}" -ge "$DEADLINE_AT" ]; }
# Sleep POLL seconds without a fork: a read with a timeout on a FIFO that
# only the background insmod writes to (fd 3, opened read-write so the open
# does not block).
nap_setup() {
	if mkfifo "$R"/tmp/nap 2>/dev/null && exec 3<>"$R"/tmp/nap; then
		# shellcheck disable=SC3045 # busybox ash's read has -t and -u
		nap() { read -r -t "$POLL" -u 3 _; }
		# shellcheck disable=SC3045
		nap1() { read -r -t 1 -u 3 _; }
	else
		nap() { sleep "$POLL"; }
		nap1() { sleep 1; }
	fi
}

# NICS: every device that matches NIC_ID, in PCI address order (a machine may
# have several MANA NICs); NIC: the first of them.
NIC='' NICS=''
find_nic() {
	NIC='' NICS=''
	for d in "$R"/sys/bus/pci/devices/*; do
		read -r v < "$d/vendor"
		read -r id < "$d/device"
		case "$NIC_ID" in
		*:*) [ "$v:$id" = "$NIC_ID" ] || continue ;;
		*) [ "$v" = "$NIC_ID" ] || continue ;;
		esac
		NICS="$NICS ${d##*/}"
		[ -n "$NIC" ] || NIC=${d##*/}
	done
	[ -n "$NIC" ]
}

# awk program (variables pat, pre): /proc/interrupts compacted, one
# `pre IRQ CPU=COUNT,… | CHIP HWIRQ NAME` line per IRQ whose line matches the
# pattern pat: only CPUs with a non-zero count (`-` if none). The CPU columns of
# /proc/interrupts are the online CPUs named in its header; with hundreds of CPUs
# a raw line is kilobytes, and every byte of the report crosses an emulated UART.
# Any other file is dumped as `f <path>: <line>`; an affinity_hint's leading
# all-zero 32-bit words are left out (72 bytes of zeros per vector at 256 CPUs).
# Paths are printed without the root prefix (variable root: "$R").
# shellcheck disable=SC2016 # an awk program: its $i are awk's fields
IRQ_AWK='FILENAME == root "/proc/interrupts" {
		if (FNR == 1) { for (i = 1; i <= NF; i++) { c = $i; sub(/^CPU/, "", c); cpu[i] = c }; n = NF; next }
		if ($0 !~ pat) next
		s = ""
		for (i = 2; i <= n + 1; i++) if ($i != 0) s = s (s == "" ? "" : ",") cpu[i - 1] "=" $i
		t = ""; for (i = n + 2; i <= NF; i++) t = t " " $i
		irq = $1; sub(/:$/, "", irq)
		print pre irq " " (s == "" ? "-" : s) " |" t
		next
	}
	FILENAME ~ /affinity_hint$/ { sub(/^(00000000,)+/, "") }
	{ print "f " substr(FILENAME, length(root) + 1) ": " $0 }'
irq_counts() { awk -v pat="$1" -v pre="" -v root="$R" "$IRQ_AWK" "$R"/proc/interrupts; }
# awk program (variable pre): /proc/softirqs' NET_RX and NET_TX rows as
# `traffic-softirq <pre> NET_RX: CPU=COUNT,…` (non-zero CPUs only, `-` for none).
# shellcheck disable=SC2016 # an awk program: its $i are awk's fields
SOFTIRQ_AWK='FNR == 1 { for (i = 1; i <= NF; i++) { c = $i; sub(/^CPU/, "", c); cpu[i] = c }; next }
	$1 == "NET_RX:" || $1 == "NET_TX:" {
		s = ""
		for (i = 2; i <= NF; i++) if ($i != 0) s = s (s == "" ? "" : ",") cpu[i - 1] "=" $i
		k = $1; sub(/:$/, "", k)
		print "traffic-softirq " pre " " k ": " (s == "" ? "-" : s)
	}'
# awk program (variable pre): `ethtool -S`'s per-queue packet and byte
# counters on one line, `traffic-stats <pre>: rx_0_packets=N tx_0_bytes=M …`.
# shellcheck disable=SC2016 # an awk program
STATS_AWK='$1 ~ /^(rx|tx)_[0-9]+_(packets|bytes):$/ { k = $1; sub(/:$/, "", k); s = s (s == "" ? "" : " ") k "=" $2 }
	END { print "traffic-stats " pre ": " (s == "" ? "-" : s) }'
MANA_PAT=' mana[_a-z0-9@:.]*$'

# True when one of the NICs' MSI-X vectors has a mana handler and every such
# vector has fired on some CPU. Builtins only, polled: /sys/kernel/irq/N/actions
# names the handlers (as /proc/interrupts does), per_cpu_count lists the counts.
all_fired() {
	[ -n "$NIC" ] || find_nic || return 1
	m=0
	for n in $NICS; do for d in "$R"/sys/bus/pci/devices/"$n"/msi_irqs/*; do
		k="$R"/sys/kernel/irq/${d##*/}
		[ -r "$k/actions" ] || continue
		read -r a < "$k/actions"
		case "$a" in *mana*) m=1 ;; *) continue ;; esac
		read -r c < "$k/per_cpu_count"
		case "$c" in *[1-9]*) ;; *) return 1 ;; esac
	done; done
	[ "$m" = 1 ]
}

SETTLE=none
INSMOD_RC=-
T_MODS=- T_PROBE=- T_IFUP=- T_CARRIER=- T_ETHTOOL=- T_SETTLED=-
CARRIER=- ETHTOOL_RC=- CHANNELS_NOW=- RMMOD_RC=- T_RMMOD=- UNLOAD_RC=- T_UNLOAD=-
UNLOAD_GO=- T_UNLOAD_MARK=- T_UNLOAD_GO=-
NETDEV=
MODS=
LAST_MOD=

# Load mana (the last module) in the background and wait for the probe, bring
# the netdev up, set the channels, wait for every vector to fire.
probe_and_settle() {
	rm -f "$R"/tmp/insmod.rc "$R"/tmp/seen "$R"/tmp/ethtool.err
	SETTLE=none INSMOD_RC=- T_PROBE=- T_IFUP=- T_CARRIER=- T_ETHTOOL=- T_SETTLED=-
	CARRIER=- ETHTOOL_RC=- CHANNELS_NOW=- NETDEV=
	# The line on fd 3 ends a nap at once: the wait sees the probe's end
	# without a poll interval's delay. The status is one write of a few bytes
	# to tmpfs, which updates the file's size only after its bytes are in: a
	# reader that sees a non-empty file (`-s`) sees the whole number (a `mv`
	# into place would cost a fork and an exec before the wait ends).
	( insmod "$R/lib/modules/manarig/$LAST_MOD"; echo $? > "$R"/tmp/insmod.rc; echo 2>/dev/null >&3 ) &
	SETTLE=deadline
	polls=0
	while ! past_deadline; do
		# Only the probe's return: the netdev's sysfs folder appears inside
		# register_netdev(), before the probe is done with it, and an
		# `ip link set up` or `ethtool -L` then races the probe's end (seen
		# on 6.1 under load: ethtool returned 0 and 8 channels stayed).
		if [ -s "$R"/tmp/insmod.rc ]; then SETTLE=probe-returned; break; fi
		# Snapshot the vectors every 0.1 s once the probe has taken 0.2 s
		# (an awk is a fork, and a quick probe needs none): they are what is
		# left to see when a slow, failing probe frees its IRQs.
		if [ "$polls" -ge 10 ] && [ $((polls % 5)) = 0 ]; then
			irq_counts "$MANA_PAT" > "$R"/tmp/seen.new 2>/dev/null && [ -s "$R"/tmp/seen.new ] && mv "$R"/tmp/seen.new "$R"/tmp/seen
		fi
		polls=$((polls + 1))
		nap
	done
	up; T_PROBE=$UP
	for n in "$R"/sys/class/net/eth*; do [ -e "$n" ] && NETDEV=${n##*/} && break; done
	if [ -n "$NETDEV" ] && [ "$IFUP" != 0 ]; then
		# Every netdev (several NICs, several vPorts: 7.x gives a vPort its
		# queue vectors when it opens); the first one's carrier is waited for.
		IFUP_OK=1
		for n in "$R"/sys/class/net/eth*; do
			[ -e "$n" ] || continue
			ip link set "${n##*/}" up || {
				[ "${n##*/}" = "$NETDEV" ] && IFUP_OK=0
				echo "manarig: ip link set ${n##*/} up failed"
			}
		done
		up; T_IFUP=$UP
		# Carrier: netif_carrier_on() in mana_open() (via mana_attach()); a
		# failed open never sets it: no wait then.
		while [ "$IFUP_OK" = 1 ] && ! past_deadline; do
			read -r CARRIER < "$R/sys/class/net/$NETDEV/carrier" 2>/dev/null
			[ "$CARRIER" = 1 ] && break
			nap
		done
		up; T_CARRIER=$UP
	fi
	if [ -n "$NETDEV" ] && [ -n "$CHANNELS" ]; then
		if [ -x "$R/sbin/ethtool" ]; then
			ethtool -L "$NETDEV" combined "$CHANNELS" 2>"$R"/tmp/ethtool.err
			ETHTOOL_RC=$?
			while read -r l; do echo "manarig: ethtool: $l"; done < "$R"/tmp/ethtool.err
		else
			echo "manarig.channels=$CHANNELS but no /sbin/ethtool in the initramfs" > "$R"/tmp/ethtool.err
			echo "manarig: $(cat "$R"/tmp/ethtool.err)"
			ETHTOOL_RC=127
		fi
		up; T_ETHTOOL=$UP
	fi
	if [ -n "$NETDEV" ]; then
		# mana sets real_num_tx_queues to apc->num_queues (mana_attach(), 6.1
		# to 7.3), which `ethtool -l` reports as Combined: one tx-N per queue.
		CHANNELS_NOW=0
		for q in "$R/sys/class/net/$NETDEV/queues/tx-"*; do [ -e "$q" ] && CHANNELS_NOW=$((CHANNELS_NOW + 1)); done
	fi
	if [ "$SETTLE" != deadline ]; then
		FIRED=no
		while ! past_deadline; do
			if all_fired; then FIRED=yes; break; fi
			# Once the probe has returned, a vector that has not fired has no
			# EQ: every EQ is tested with an EQE, waited for, when it is created
			# (mana_gd_test_eq), inside probe, `ip link set up` (7.x) and
			# `ethtool -L`, all done by now. E.g. 6.12 allocates an IRQ per CPU
			# but creates only max_queues EQs (topologies/r05-dyn-skip.toml).
			[ -s "$R"/tmp/insmod.rc ] && break
			nap
		done
		SETTLE="$SETTLE fired=$FIRED"
	fi
	up; T_SETTLED=$UP
	[ -s "$R"/tmp/insmod.rc ] && read -r INSMOD_RC < "$R"/tmp/insmod.rc
}

# fd 5 while a stage or the report is written: the console, or with
# `manarig.report=ttyS1` the second serial port, open only for the block (its
# IRQ is requested at open and freed at close: the driver never probes beside it).
# BLOCK_IN: where the host's answer to a mark arrives (await_go_ahead): the
# console's input (fd 0, /dev/console: QEMU's stdin) or the port itself, opened
# read-write (QEMU's report.in); input that reaches a closed port is dropped.
block_open() {
	exec 5>&1
	BLOCK_IN=0
	case "$REPORT" in
	"") return 0 ;;
	ttyS1) ;;
	*) echo "manarig: manarig.report=$REPORT is not ttyS1; this block goes to the console"; return 0 ;;
	esac
	# `ttyS1` names the second serial port: on arm64 (QEMU's virt machine) it
	# is the second PL011 UART, /dev/ttyAMA1.
	port=/dev/ttyS1
	[ -c /dev/ttyAMA1 ] && port=/dev/ttyAMA1
	# `command exec`: a redirection that fails does not end the shell (PID 1)
	# as a plain `exec` would. A port the kernel registered without finding a
	# UART opens, but every write fails (EIO): one empty line tells.
	{ command exec 5<>"$port" && echo >&5; } 2>/dev/null && BLOCK_IN=5 && return 0
	exec 5>&1
	echo "manarig: manarig.report=ttyS1: $port cannot be opened or written (no second serial port?); this block goes to the console"
}
# Closing the port's last fd waits until the UART has sent everything
# (tty_port_close_start()): neither poweroff nor rmmod cuts the block's tail off.
block_close() { exec 5>&-; }

# Inside a block, after a mark the host answers (`MANARIG-UNLOAD`): wait at most
# UNLOAD_GO_WAIT seconds for the host's `MANARIG-GO` line on BLOCK_IN. GO=go
# when it came, `timeout` when it did not (the wait ran out, or the port could
# not be read). The port's echo is turned off first: a go-ahead that arrives
# late must not be echoed into a block.
await_go_ahead() {
	GO=timeout
	up; go_at=$((${UP%.*} + UNLOAD_GO_WAIT)); left=$UNLOAD_GO_WAIT
	# shellcheck disable=SC3045 # busybox ash's read has -t and -u
	while [ "$left" -gt 0 ] && read -r -t "$left" -u "$BLOCK_IN" go_line; do
		[ "$go_line" = MANARIG-GO ] && GO=go && return 0
		up; left=$((go_at - ${UP%.*}))
	done
}

# Read every IRQ's affinity_hint (the files a freed or stale hint would break).
read_hints() { cat "$R"/proc/irq/*/affinity_hint > /dev/null 2>&1; }

# SCAN_AT: the guest second from which kmemleak sees everything the run has
# done: 6 s after the latest of the last probe's settling and the ends of the
# traffic, the soak, the selftests and irqbalance (what a driver leaks there,
# e.g. the skbs of the traffic, is reported only once it is 5 s old);
# `-` when none of them happened.
scan_at() {
	SCAN_AT=-
	for t in "$T_SETTLED" "$T_TRAFFIC_END" "$T_SOAK_END" "$T_SELFTESTS_END" "$T_IRQB_END"; do
		case "$t" in -|'') continue ;; esac
		t=${t%.*}
		if [ "$SCAN_AT" = - ] || [ $((t + 6)) -gt "$SCAN_AT" ]; then SCAN_AT=$((t + 6)); fi
	done
}
# Debug kernels: have kmemleak scan memory now (KMEMLEAK counts the scan points).
# kmemleak reports an object only once it is 5 s old (MSECS_MIN_AGE in
# mm/kmemleak.c), so the scan waits until SCAN_AT (scan_at); and a first scan
# only records an object's checksum (a changed one is not reported), so it
# scans twice.
kmemleak_scan() {
	case "$KMEMLEAK" in -|absent|disabled) return 0 ;; esac
	scan_at
	case "$SCAN_AT" in
	-) ;;
	*) while up; [ "${UP%.*}" -lt "$SCAN_AT" ]; do sleep 1; done ;;
	esac
	# A kmemleak that disabled itself (e.g. its early object pool ran out at
	# boot) refuses the scan with EPERM: say so instead of counting a scan.
	# kmemleak resolves a backtrace's symbols when the file is read: read it
	# now, while the driver is loaded (a later rmmod would leave no [mana] frame).
	if echo scan 2>/dev/null > "$R"/sys/kernel/debug/kmemleak && echo scan 2>/dev/null > "$R"/sys/kernel/debug/kmemleak; then
		KMEMLEAK=$((KMEMLEAK + 1))
		cat "$R"/sys/kernel/debug/kmemleak > "$R"/tmp/kmemleak.txt
	else
		KMEMLEAK=disabled
	fi
}
# awk program: the kernel log's reports (KASAN, lockdep, WARN, BUG, oops) as
# `klog:` lines without their timestamps, each from its first line for at
# most 150 lines (a KASAN report with its allocation and free stacks is about
# 60); the host splits them into reports and finds the mana frames.
# shellcheck disable=SC2016 # an awk program
KLOG_AWK='{ sub(/^\[ *[0-9]+\.[0-9]+\] /, "") }
	/^(BUG: |WARNING: |Oops|general protection fault|------------\[ cut here \])/ { left = 150 }
	left > 0 && $0 != "" { print "klog: " $0; left-- }'

# sysfs/procfs files are dumped raw, one `f <path>: <value>` line per line of
# each file, by one awk per group (a fork per value costs ~10 ms under TCG; one
# awk reads hundreds of files). The host parses the paths.
C="$R"/sys/devices/system/cpu
N="$R"/sys/devices/system/node
P="$R"/sys/bus/pci/devices

# CPU hotplug through sysfs: set_cpus 0|1 CPULIST writes the value to each
# listed CPU's `online` file in ascending order (the kernel migrates IRQs off a
# CPU inside the write); HOTPLUG is 0, or 1 once a write failed (its error in
# /tmp/hotplug.err).
HOTPLUG=-
set_cpus() {
	[ "$HOTPLUG" = - ] && HOTPLUG=0
	old_ifs=$IFS
	IFS=,
	for r in $2; do
		a=${r%-*} b=${r#*-}
		while [ "$a" -le "$b" ]; do
			if ! echo "$1" 2>>"$R"/tmp/hotplug.err > "$C/cpu$a/online"; then
				echo "echo $1 > $C/cpu$a/online failed" >> "$R"/tmp/hotplug.err
				HOTPLUG=1
			fi
			a=$((a + 1))
		done
	done
	IFS=$old_ifs
}

# The topology, node and PCI ID files (and MemTotal of each node): one awk.
# (Run in the background during the probe, it slowed the probe down by more
# than it saved: the vCPUs share one host thread.)
topology_files() {
	# The CPU masks that exist (nohz_full needs CONFIG_NO_HZ_FULL): busybox
	# awk stops at the first file it cannot open.
	masks=
	for f in $C/online $C/present $C/possible $C/offline $C/isolated $C/nohz_full "$R"/proc/irq/default_smp_affinity; do
		[ -e "$f" ] && masks="$masks $f"
	done
	# arm64: the clusters (QEMU's virt machine has them; the guest-topology
	# check compares each CPU's cluster group with the declared one). An
	# arm64 kernel shows each online CPU's MIDR_EL1 in sysfs
	# (cpuN/regs/identification/midr_el1), an x86 one has no such file:
	# a glob tells them apart without the fork and exec of `uname -m`.
	clusters=
	for f in "$C"/cpu[0-9]*/regs/identification/midr_el1; do
		[ -e "$f" ] && clusters="$C/cpu[0-9]*/topology/cluster_id"
		break
	done
	# die_id is x86's (and s390's): arm64 kernels have none.
	dies=
	for f in "$C"/cpu[0-9]*/topology/die_id; do
		[ -e "$f" ] && dies="$C/cpu[0-9]*/topology/die_id"
		break
	done
	# shellcheck disable=SC2086 # $masks, $dies and $clusters are lists of paths without blanks
	awk -v root="$R" '{ f = substr(FILENAME, length(root) + 1) }
		/^Node [0-9]+ MemTotal:/ { print "f " f ": " $4; next }
		f !~ /meminfo$/ { print "f " f ": " $0 }' \
		$masks $C/cpu[0-9]*/topology/physical_package_id $dies \
		$C/cpu[0-9]*/topology/core_id $C/cpu[0-9]*/topology/thread_siblings_list $clusters \
		$N/node[0-9]*/cpulist $N/node[0-9]*/distance $N/node[0-9]*/meminfo \
		$P/*/vendor $P/*/device $P/*/class $P/*/numa_node 2>/dev/null
}
# The modules in /lib/modules/manarig/order, the last (mana) in the
# background (probe_and_settle); the CPUs of `manarig.offline` go offline first.
load_and_probe() {
	while read -r m; do MODS="$MODS $m"; done < "$R"/lib/modules/manarig/order
	for m in $MODS; do LAST_MOD=$m; done
	for m in $MODS; do
		[ "$m" = "$LAST_MOD" ] && break
		insmod "$R/lib/modules/manarig/$m" || echo "manarig: insmod $m failed"
	done
	up; T_MODS=$UP
	[ -n "$OFFLINE" ] && set_cpus 0 "$OFFLINE"
	up; DEADLINE_AT=$((${UP%.*} + DEADLINE))
	probe_and_settle
}

# F: the /proc/irq/N/* files of the NICs $1 (PCI addresses); PAT: their IRQs as
# an awk alternation (`|25|26…`).
nic_irqs() {
	F='' PAT=
	# Two loops, no `$(…)`: a command substitution is a fork.
	for n in $1; do for i in "$P/$n"/msi_irqs/*; do
		[ -e "$i" ] || continue
		i=${i##*/}
		F="$F $R/proc/irq/$i/smp_affinity_list $R/proc/irq/$i/affinity_hint $R/proc/irq/$i/effective_affinity_list"
		PAT="$PAT|$i"
	done; done
}

ADDR_RC=- PING=- TRAFFIC_RC=- T_TRAFFIC=- T_TRAFFIC_END=-
# The counters around the traffic, as report lines (moment $1: before|after):
# the NIC's IRQs per CPU, NET_RX/NET_TX softirqs per CPU, ethtool -S per queue.
# ethtool -S asks the device for its port statistics over the HWC (6.12 on:
# mana_query_gf_stats()), an interrupt of its own: it runs outside the two
# interrupt readings, so that they enclose the traffic alone.
traffic_stats() {
	if [ -x "$R/sbin/ethtool" ]; then ethtool -S "$NETDEV" 2>/dev/null | awk -v pre="$1" "$STATS_AWK"; fi
}
traffic_counts() {
	[ "$1" = before ] && traffic_stats "$1"
	find_nic && nic_irqs "$NIC"
	# shellcheck disable=SC2086 # PAT holds no blanks
	[ -n "$PAT" ] && awk -v pat="^ *(${PAT#|}):" -v pre="traffic-irq $1: " -v root="$R" "$IRQ_AWK" "$R"/proc/interrupts
	awk -v pre="$1" "$SOFTIRQ_AWK" "$R"/proc/softirqs
	[ "$1" = after ] && traffic_stats "$1"
}

# manarig.addr: the netdev's address; manarig.traffic: ping the peer, then
# the flows the rig planned (manarig-flows guest: it connects to the peer's
# control port, takes the plan, runs the guest's side, exits 0 when every
# flow's bytes were verified), with the counters read before and after.
run_traffic() {
	[ -n "$NETDEV" ] || return 0
	if [ -n "$ADDR" ]; then
		ip addr add "$ADDR" dev "$NETDEV" 2>"$R"/tmp/addr.err
		ADDR_RC=$?
	fi
	[ -n "$TRAFFIC" ] || return 0
	traffic_counts before > "$R"/tmp/traffic.before
	up; T_TRAFFIC=$UP
	ping -c 3 -A -W 2 -w 10 "${TRAFFIC%:*}" > "$R"/tmp/ping.out 2>&1
	PING=$?
	while read -r l; do
		case "$l" in *"packets transmitted"*) PING="$PING $l" ;; esac
	done < "$R"/tmp/ping.out
	if [ -x "$R/sbin/manarig-flows" ] && [ -n "$SOAK" ]; then
		run_soak
	elif [ -x "$R/sbin/manarig-flows" ]; then
		manarig-flows guest --peer "$TRAFFIC" --guest "${ADDR%/*}" --deadline "$DEADLINE" > "$R"/tmp/flows.out 2>"$R"/tmp/traffic.err
		TRAFFIC_RC=$?
	else
		echo "manarig.traffic=$TRAFFIC but no /sbin/manarig-flows in the initramfs" > "$R"/tmp/traffic.err
		TRAFFIC_RC=127
	fi
	up; T_TRAFFIC_END=$UP
	traffic_counts after > "$R"/tmp/traffic.after
}

# manarig.soak=M (with manarig.traffic; instead of one run of the flows): M
# guest minutes of traffic rounds (`manarig-flows guest` again and again, in
# the background: each round the flows the rig plans then) while, every
# minute k, at these guest seconds from the soak's start:
#   60k     `MANARIG-SOAK sample k` (the rig samples the device process)
#   60k+5   ethtool -L <netdev> combined <entry k mod n of manarig.soak_channels>
#   60k+20  `MANARIG-SOAK link-down k` (the rig has the device raise the link
#           event), the carrier read 5 s later; 60k+25 the same for link-up
#   60k+40  rmmod mana, mana loaded again (probe, link up, carrier, the
#           vectors fired), ip addr add
# then `MANARIG-SOAK sample M` at 60M, and the loop stops after its round.
# Each step is a `soak <k> <step>:` line of the report, each round a
# `soak-round <n>:` line; the tools' errors go to `stderr soak:` (the last 40).
T_SOAK=- T_SOAK_END=- SOAK_T0=0
soak_mark() {
	block_open
	echo "MANARIG-SOAK $1 $2" >&5
	block_close
}
# soak_step MINUTE STEP STATUS [DETAIL]: the step's report line, stamped now.
soak_step() {
	up
	echo "soak $1 $2: $3 $UP ${4:--}" >> /tmp/soak.steps
}
# Until guest second SOAK_T0 + $1 (at once when that is past).
soak_until() {
	while up; [ "${UP%.*}" -lt $((SOAK_T0 + $1)) ]; do nap1; done
}
# CARRIER_NOW: the netdev's carrier now (`-` when it cannot be read: no netdev, or down).
carrier_now() {
	CARRIER_NOW=-
	soak_c=
	[ -n "$NETDEV" ] && read -r soak_c < "/sys/class/net/$NETDEV/carrier" 2>/dev/null
	[ -n "$soak_c" ] && CARRIER_NOW=$soak_c
}
# The traffic loop: rounds until /tmp/soak.stop exists, each bounded by the
# agent's deadline (the rig's plan bounds its flows); a round that could not
# run (status 2) waits a second before the next.
soak_rounds() {
	soak_n=0
	while [ ! -e /tmp/soak.stop ]; do
		up
		soak_left=$((DEADLINE_AT - ${UP%.*}))
		[ "$soak_left" -ge 1 ] || break
		soak_n=$((soak_n + 1))
		manarig-flows guest --peer "$TRAFFIC" --guest "${ADDR%/*}" --deadline "$soak_left" > /dev/null 2>/tmp/soak-round.err
		soak_rc=$?
		up
		echo "soak-round $soak_n: $soak_rc $UP" >> /tmp/soak.rounds
		if [ "$soak_rc" != 0 ]; then
			while read -r l; do echo "round $soak_n: $l"; done < /tmp/soak-round.err >> /tmp/soak.err
		fi
		[ "$soak_rc" = 2 ] && sleep 1
	done
}
run_soak() {
	rm -f /tmp/soak.stop /tmp/soak.steps /tmp/soak.rounds /tmp/soak.err
	soak_rounds &
	SOAK_LOOP=$!
	up
	SOAK_T0=${UP%.*} T_SOAK=$UP
	old_ifs=$IFS
	IFS=,
	# shellcheck disable=SC2086 # split at the commas
	set -- $SOAK_CHANNELS
	IFS=$old_ifs
	SOAK_K=0
	while [ "$SOAK_K" -lt "$SOAK" ]; do
		soak_until $((60 * SOAK_K))
		soak_mark sample "$SOAK_K"
		if [ $# -gt 0 ]; then
			soak_until $((60 * SOAK_K + 5))
			eval "soak_c=\${$((SOAK_K % $# + 1))}"
			ethtool -L "$NETDEV" combined "$soak_c" 2>>/tmp/soak.err
			soak_rc=$?
			soak_now=0
			for q in "/sys/class/net/$NETDEV/queues/tx-"*; do [ -e "$q" ] && soak_now=$((soak_now + 1)); done
			soak_step "$SOAK_K" channels "$soak_rc" "$soak_now"
		fi
		soak_until $((60 * SOAK_K + 20))
		soak_mark link-down "$SOAK_K"
		soak_until $((60 * SOAK_K + 25))
		carrier_now
		soak_step "$SOAK_K" link-down - "$CARRIER_NOW"
		soak_mark link-up "$SOAK_K"
		soak_until $((60 * SOAK_K + 30))
		carrier_now
		soak_step "$SOAK_K" link-up - "$CARRIER_NOW"
		soak_until $((60 * SOAK_K + 40))
		rmmod "${LAST_MOD%.ko}" 2>>/tmp/soak.err
		soak_step "$SOAK_K" rmmod $?
		probe_and_settle
		soak_step "$SOAK_K" insmod "$INSMOD_RC" "$CARRIER"
		ip addr add "$ADDR" dev "$NETDEV" 2>>/tmp/soak.err
		soak_step "$SOAK_K" addr $?
		SOAK_K=$((SOAK_K + 1))
	done
	soak_until $((60 * SOAK))
	soak_mark sample "$SOAK"
	up
	T_SOAK_END=$UP
	: > /tmp/soak.stop
	# The loop ends after its round (the plan's limit bounds it), at the
	# latest at the agent's deadline.
	while proc_state "$SOAK_LOOP"; [ "$ST" != - ] && [ "$ST" != Z ] && ! past_deadline; do nap1; done
	proc_state "$SOAK_LOOP"
	if [ "$ST" != - ] && [ "$ST" != Z ]; then
		echo "the traffic loop was still running at the deadline: stopped" >> /tmp/soak.err
		kill "$SOAK_LOOP" 2>/dev/null
	fi
	wait "$SOAK_LOOP" 2>/dev/null
	if [ -s /tmp/soak.err ]; then tail -n 40 /tmp/soak.err > /tmp/soak.err.new && mv /tmp/soak.err.new /tmp/soak.err; fi
}

# manarig.selftests=FILE,…: the kernel's drivers/net selftests (copied by
# the host under /ksrc with their source's layout, with net.config in each
# test folder). First the remote end as netdev's CI sets it up: the second
# NIC's driver (virtio_net, /lib/modules/manarig/remote/order) is loaded
# now, after mana, so that the MANA netdev keeps its name; its netdev moves
# into netns $REMOTE_ARGS with the REMOTE_ addresses, the MANA netdev gets the
# LOCAL_ ones (IPv6 without duplicate address detection, as NIPA's runner).
# The remote NIC sends through fq (sch_fq, in the tests' own config), the
# qdisc that honours SO_TXTIME: gro.c stamps each test's packets with one
# departure time so that they leave together, and without fq they left one
# by one at the pace of the guest's sender.
# Then each test runs from its folder with Debian's tools first on PATH (the
# initramfs's busybox `ip` cannot `ip netns`), stopped after
# manarig.selftest_timeout guest seconds; its output (stdout and stderr) goes
# to /tmp/selftest.N.
ST_DIR="$R"/ksrc/tools/testing/selftests/drivers/net
ST_PATH=/usr/sbin:/usr/bin:/sbin:/bin
# iproute2's ip by its path: busybox's shell runs its own `ip` applet
# whatever PATH says.
IPR=/usr/sbin/ip
ST_SETUP=- T_SELFTESTS=- T_SELFTESTS_END=- RIF=
selftest_remote() {
	# shellcheck disable=SC1091 # written by the host into the initramfs
	. "$ST_DIR/net.config" || return 1
	[ "$NETDEV" = "$NETIF" ] || { echo "the MANA netdev is $NETDEV, net.config says NETIF=$NETIF"; return 1; }
	while read -r m; do
		insmod "$R/lib/modules/manarig/remote/$m" || { echo "insmod $m failed"; return 1; }
	done < "$R"/lib/modules/manarig/remote/order
	for n in "$R"/sys/class/net/*; do
		d=$(readlink "$n/device/driver" 2>/dev/null)
		[ "${d##*/}" = virtio_net ] && RIF=${n##*/} && break
	done
	[ -n "$RIF" ] || { echo "no virtio_net netdev: the remote end's NIC is missing"; return 1; }
	mkdir -p "$R"/run/netns
	# The tests take the interface down and up (queues.py, `ethtool -L`):
	# keep the addresses over it, as a managed host re-adds them (Linux
	# flushes IPv6 addresses on down by default).
	echo 1 > "$R"/proc/sys/net/ipv6/conf/all/keep_addr_on_down
	echo 1 > "$R/proc/sys/net/ipv6/conf/$NETIF/keep_addr_on_down"
	$IPR netns add "$REMOTE_ARGS" &&
		$IPR link set "$RIF" netns "$REMOTE_ARGS" &&
		$IPR -n "$REMOTE_ARGS" link set lo up &&
		$IPR -n "$REMOTE_ARGS" addr add "$REMOTE_V4/24" dev "$RIF" &&
		$IPR -n "$REMOTE_ARGS" -6 addr add "$REMOTE_V6/64" dev "$RIF" nodad &&
		$IPR -n "$REMOTE_ARGS" link set "$RIF" up &&
		/usr/sbin/tc -n "$REMOTE_ARGS" qdisc replace dev "$RIF" root fq &&
		$IPR addr add "$LOCAL_V4/24" dev "$NETIF" &&
		$IPR -6 addr add "$LOCAL_V6/64" dev "$NETIF" nodad
}
# manarig.selftest_slack=NS: this shell's timer slack, which every program
# it starts inherits (a sleep may end NS late). Without it toeplitz.c's
# usleep(100) polling takes most of a TCG guest's time from the sender
# (docs/selftests.md, "The receiver's polling").
selftest_slack() {
	[ -z "$SELFTEST_SLACK" ] || echo "$SELFTEST_SLACK" > /proc/self/timerslack_ns || echo "selftest_slack: cannot set the timer slack to $SELFTEST_SLACK ns"
	return 0
}
run_selftests() {
	[ -n "$NETDEV" ] || return 0
	snapshot_nic_irqs
	up; T_SELFTESTS=$UP
	selftest_remote > "$R"/tmp/selftest-setup.err 2>&1
	ST_SETUP=$?
	selftest_mark 0
	n=0
	old_ifs=$IFS
	IFS=,
	for t in $SELFTESTS; do
		IFS=$old_ifs
		n=$((n + 1))
		case "$t" in */*) d=$ST_DIR/${t%/*} ;; *) d=$ST_DIR ;; esac
		up; t0=$UP
		( cd "$d" && selftest_slack && PATH=$ST_PATH HOME=/tmp timeout "$SELFTEST_TIMEOUT" /usr/bin/python3 -u "${t##*/}" ) > "$R/tmp/selftest.$n" 2>&1 < /dev/null
		rc=$?
		up
		secs=$(awk -v a="$t0" -v b="$UP" 'BEGIN { printf "%.1f", b - a }')
		# busybox timeout sends SIGTERM, which ksft catches to print its
		# results and exit 1: a run that lasted the limit was stopped.
		[ "${secs%.*}" -ge "$SELFTEST_TIMEOUT" ] && rc=timeout
		echo "$t $rc $secs" >> "$R"/tmp/selftest.exits
		selftest_mark "$n"
	done
	IFS=$old_ifs
	up; T_SELFTESTS_END=$UP
}

# selftest_mark K: both ends' counters now (selftest_netdev_counters,
# selftest_remote_counters: the report's `selftest-netdev-at K`,
# `selftest-remote-at K`, and after the last program its `selftest-netdev`
# and `selftest-remote`), then `MANARIG-SELFTEST K` on the report channel,
# at which the rig takes the device's status. Mark 0 comes before the first
# program, mark k after the k-th: a program's counters are the difference of
# its two marks, read while no test runs.
selftest_mark() {
	selftest_netdev_counters
	selftest_remote_counters
	[ -n "$ST_NETDEV" ] && echo "selftest-netdev-at $1 $ST_NETDEV" >> "$R"/tmp/selftest.marks
	[ -n "$ST_REMOTE" ] && echo "selftest-remote-at $1 $ST_REMOTE" >> "$R"/tmp/selftest.marks
	block_open
	echo "MANARIG-SELFTEST $1" >&5
	block_close
}

# The MANA netdev's counters since the probe, at a selftest mark, into
# ST_NETDEV: `<netdev>: rx_packets=N rx_dropped=N rx_missed_errors=N
# tx_packets=N` (/sys/class/net/<netdev>/statistics: what the driver's
# get_stats64 and the core's drops say; the report's `selftest-netdev`), so
# that a test that missed packets shows whether the guest dropped them.
ST_NETDEV=
selftest_netdev_counters() {
	ST_NETDEV=
	s="$R/sys/class/net/$NETDEV/statistics"
	[ -d "$s" ] || return 0
	ST_NETDEV="$NETDEV:"
	for c in rx_packets rx_dropped rx_missed_errors tx_packets; do
		v=-
		[ -r "$s/$c" ] && read -r v < "$s/$c"
		ST_NETDEV="$ST_NETDEV $c=$v"
	done
}

# The remote end's counters at a selftest mark, read inside netns
# $REMOTE_ARGS (whose /sys and /proc/net `ip netns exec` shows), into
# ST_REMOTE: `<netdev>: rx_packets=N rx_dropped=N rx_missed_errors=N
# tx_packets=N udp_in=N udp_no_ports=N udp_in_errors=N` (the remote NIC's
# statistics, and UDP over IPv4 and IPv6 together from snmp and snmp6:
# datagrams a socket took, datagrams that found no socket, datagrams dropped
# for a bad checksum or a full buffer; the report's `selftest-remote`). A
# frame the MANA sent that the remote NIC counted reached it; one that came
# after its receiver closed counts in udp_no_ports. `-`: not read.
ST_REMOTE=
# awk program: the `name:value` lines of grep over the statistics files and
# the snmp/snmp6 text, as ST_REMOTE's pairs.
# shellcheck disable=SC2016 # an awk program
ST_REMOTE_AWK='function n(k) { return (k in v) ? v[k] : "-" }
function add(k, x) { v[k] = (k in v ? v[k] : 0) + x }
/^[a-z_]+:[0-9]+$/ { split($0, p, ":"); v[p[1]] = p[2]; next }
$1 == "Udp:" && !cols { for (i = 2; i <= NF; i++) col[$i] = i; cols = 1; next }
$1 == "Udp:" { add("udp_in", $col["InDatagrams"]); add("udp_no_ports", $col["NoPorts"]); add("udp_in_errors", $col["InErrors"]); next }
$1 == "Udp6InDatagrams" { add("udp_in", $2) }
$1 == "Udp6NoPorts" { add("udp_no_ports", $2) }
$1 == "Udp6InErrors" { add("udp_in_errors", $2) }
END { printf "rx_packets=%s rx_dropped=%s rx_missed_errors=%s tx_packets=%s udp_in=%s udp_no_ports=%s udp_in_errors=%s",
	n("rx_packets"), n("rx_dropped"), n("rx_missed_errors"), n("tx_packets"), n("udp_in"), n("udp_no_ports"), n("udp_in_errors") }'
selftest_remote_counters() {
	ST_REMOTE=
	[ -n "$RIF" ] || return 0
	# shellcheck disable=SC2016 # the inner shell expands its own arguments
	$IPR netns exec "$REMOTE_ARGS" /bin/sh -c \
		'cd "$1" && grep -H . rx_packets rx_dropped rx_missed_errors tx_packets; cat "$2/snmp" "$2/snmp6"' \
		- "$R/sys/class/net/$RIF/statistics" "$R/proc/net" > "$R"/tmp/selftest.remote 2> /dev/null
	ST_REMOTE="$RIF: $(awk "$ST_REMOTE_AWK" "$R"/tmp/selftest.remote)"
}

IRQB=- T_IRQB=- T_IRQB_END=-
# awk program (variable pre): one `irqbalance-sample` line from the files
# /proc/irq/N/smp_affinity_list and effective_affinity_list, `pre N=SMP/EFF …`
# in the order the files were given.
# shellcheck disable=SC2016 # an awk program
IRQB_AWK='{ split(substr(FILENAME, length(root) + 1), p, "/"); n = p[4] }
	FILENAME ~ /smp_affinity_list$/ { s[n] = $0; o[++k] = n }
	FILENAME ~ /effective_affinity_list$/ { e[n] = $0 }
	END { l = pre; for (i = 1; i <= k; i++) l = l " " o[i] "=" s[o[i]] "/" e[o[i]]; print l }'
irqb_sample() {
	up
	# shellcheck disable=SC2086 # $IRQB_F is a list of paths without blanks
	awk -v pre="irqbalance-sample $1: $UP" -v root="$R" "$IRQB_AWK" $IRQB_F 2>/dev/null
}
# The state of process $1: its /proc/PID/stat state letter, `-` once it is gone.
proc_state() {
	ST=-
	[ -r "$R/proc/$1/stat" ] && read -r _ _ ST _ < "$R/proc/$1/stat"
}
# manarig.irqbalance=S: the NIC's IRQ lines as they are now go to the report
# (/tmp/nic.pre: the driver's placement), then irqbalance runs in the
# foreground (1.9.x: no --hintpolicy, affinity_hint is never read) with a
# 1 s interval, the NIC's IRQs are sampled once a guest second for S seconds,
# and irqbalance is stopped (SIGTERM, SIGKILL after 5 s). Bounded: S samples.
# The NIC's IRQ lines (per-CPU counts and affinity files) into /tmp/nic.pre,
# once: the report shows them instead of the live files when something is
# about to move the IRQs (irqbalance) or free them (the final rmmod).
snapshot_nic_irqs() {
	find_nic || return 1
	nic_irqs "$NICS"
	[ -s "$R"/tmp/nic.pre ] && return 0
	# shellcheck disable=SC2086 # $F is a list of paths without blanks
	[ -n "$PAT" ] && awk -v pat="^ *(${PAT#|}):" -v pre="irqcount: " -v root="$R" "$IRQ_AWK" "$R"/proc/interrupts $F > "$R"/tmp/nic.pre 2>/dev/null
	return 0
}

run_irqbalance() {
	snapshot_nic_irqs || return 0
	IRQB_F=
	for n in $NICS; do for d in "$P/$n"/msi_irqs/*; do
		i="$R"/proc/irq/${d##*/}
		if [ -e "$i/smp_affinity_list" ] && [ -e "$i/effective_affinity_list" ]; then
			IRQB_F="$IRQB_F $i/smp_affinity_list $i/effective_affinity_list"
		fi
	done; done
	if [ ! -x "$R/sbin/irqbalance" ]; then
		echo "manarig.irqbalance=$IRQBALANCE but no /sbin/irqbalance in the initramfs" > "$R"/tmp/irqbalance.err
		IRQB=absent
		return 0
	fi
	# irqbalance 1.9 exits at start when it cannot create its AF_UNIX socket;
	# /proc/net/unix exists exactly when the kernel has them (CONFIG_UNIX).
	if [ ! -e "$R"/proc/net/unix ]; then
		echo "no /proc/net/unix: the kernel has no AF_UNIX sockets (CONFIG_UNIX), without which irqbalance exits at start" > "$R"/tmp/irqbalance.err
		IRQB=no-af-unix
		return 0
	fi
	mkdir -p "$R"/run/irqbalance
	irqb_sample 0 > "$R"/tmp/irqbalance.samples
	up; T_IRQB=$UP
	irqbalance --foreground --interval=1 > "$R"/tmp/irqbalance.err 2>&1 &
	pid=$!
	IRQB=stopped
	k=1
	while [ "$k" -le "$IRQBALANCE" ]; do
		sleep 1
		irqb_sample "$k" >> "$R"/tmp/irqbalance.samples
		k=$((k + 1))
		proc_state "$pid"
		case "$ST" in -|Z) IRQB=exited; break ;; esac
	done
	if [ "$IRQB" = stopped ]; then
		kill "$pid" 2>/dev/null
		w=0
		while proc_state "$pid"; [ "$ST" != - ] && [ "$ST" != Z ] && [ "$w" -lt 50 ]; do sleep 0.1; w=$((w + 1)); done
		[ "$w" -ge 50 ] && kill -9 "$pid" 2>/dev/null && IRQB=killed
		wait "$pid"
	else
		wait "$pid"
		IRQB="exited $?"
	fi
	up; T_IRQB_END=$UP
}

# Everything between the report markers (also printed for a stage).
report_body() {
	read -r RELEASE < "$R"/proc/sys/kernel/osrelease
	echo "kernel: $RELEASE"
	echo "cmdline: $CMDLINE"
	# The environment the kernel gave /init: HOME and TERM, plus every
	# name=value command-line parameter it did not take (no handler built in,
	# or its handler refused the value: init/main.c unknown_bootoption()).
	# NUL-separated; busybox ash's read splits it without a fork.
	# shellcheck disable=SC3045 # busybox ash's read has -d
	while IFS= read -r -d '' e; do echo "initenv: $e"; done < "$R"/proc/1/environ
	echo "time init: $T_INIT"
	echo "time modules: $T_MODS"
	echo "time probe: $T_PROBE"
	echo "time ifup: $T_IFUP"
	echo "time carrier: $T_CARRIER"
	echo "carrier: $CARRIER"
	echo "time ethtool: $T_ETHTOOL"
	echo "ethtool: $ETHTOOL_RC"
	echo "channels: ${CHANNELS_NOW:--}"
	echo "time rmmod: $T_RMMOD"
	echo "rmmod: $RMMOD_RC"
	echo "time unload-mark: $T_UNLOAD_MARK"
	echo "time unload-go: $T_UNLOAD_GO"
	echo "unload-handshake: $UNLOAD_GO"
	echo "time unload: $T_UNLOAD"
	echo "unload: $UNLOAD_RC"
	echo "carrier-unload: ${CARRIER_UNLOAD:--}"
	echo "hotplug: $HOTPLUG"
	echo "time traffic: $T_TRAFFIC"
	echo "time traffic-end: $T_TRAFFIC_END"
	echo "addr: $ADDR_RC"
	echo "ping: $PING"
	echo "traffic: $TRAFFIC_RC"
	echo "time irqbalance: $T_IRQB"
	echo "time irqbalance-end: $T_IRQB_END"
	echo "irqbalance: $IRQB"
	echo "time selftests: $T_SELFTESTS"
	echo "time soak: $T_SOAK"
	echo "time soak-end: $T_SOAK_END"
	echo "time selftests-end: $T_SELFTESTS_END"
	echo "selftest-setup: $ST_SETUP"
	if [ -s "$R"/tmp/selftest.exits ]; then
		k=0
		while read -r t rc secs; do
			k=$((k + 1))
			while IFS= read -r l; do echo "selftest $t: $l"; done < "$R/tmp/selftest.$k"
			echo "selftest-exit $t: $rc $secs"
		done < "$R"/tmp/selftest.exits
	fi
	[ -n "$ST_NETDEV" ] && echo "selftest-netdev $ST_NETDEV"
	[ -n "$ST_REMOTE" ] && echo "selftest-remote $ST_REMOTE"
	[ -s "$R"/tmp/selftest.marks ] && while read -r l; do echo "$l"; done < "$R"/tmp/selftest.marks
	[ -s "$R"/tmp/irqbalance.samples ] && while read -r l; do echo "$l"; done < "$R"/tmp/irqbalance.samples
	for t in steps rounds; do
		[ -s "$R/tmp/soak.$t" ] && while read -r l; do echo "$l"; done < "$R/tmp/soak.$t"
	done
	for t in before after; do
		[ -s "$R/tmp/traffic.$t" ] && while read -r l; do echo "$l"; done < "$R/tmp/traffic.$t"
	done
	for t in ethtool rmmod addr traffic soak unload hotplug irqbalance selftest-setup; do
		[ -s "$R/tmp/$t.err" ] && while read -r l; do echo "stderr $t: $l"; done < "$R/tmp/$t.err"
	done
	echo "netdev: ${NETDEV:--}"
	echo "time settled: $T_SETTLED"
	echo "load: ${LOAD:-none}"
	echo "settle: $SETTLE"
	echo "insmod: $INSMOD_RC"
	for l in "$C"/cpu[0-9]*/node[0-9]*; do [ -e "$l" ] && echo "link ${l#"$R"}"; done
	topology_files
	# Bound drivers: `ls -l` prints `… PATH -> TARGET` for every link at once.
	# shellcheck disable=SC2012 # one ls for every link (a readlink each is a fork each)
	ls -l "$P"/*/driver 2>/dev/null | while read -r l; do
		# shellcheck disable=SC2086 # split into ls' fields
		set -- $l
		[ $# -ge 3 ] || continue
		link='' target=''
		eval "link=\${$(($# - 2))} target=\${$#}"
		echo "f ${link#"$R"}: $target"
	done
	if find_nic; then
		for n in $NICS; do echo "nic: $n"; done
		nic_irqs "$NICS"
		# The vectors' counts and affinity files in one awk; after irqbalance
		# or the final rmmod, as they were just before (snapshot_nic_irqs).
		if [ -s "$R"/tmp/nic.pre ]; then
			while read -r l; do echo "$l"; done < "$R"/tmp/nic.pre
		else
			# shellcheck disable=SC2086 # $F is a list of paths without blanks
			[ -n "$PAT" ] && awk -v pat="^ *(${PAT#|}):" -v pre="irqcount: " -v root="$R" "$IRQ_AWK" "$R"/proc/interrupts $F 2>/dev/null
		fi
	else
		echo "nic: none"
	fi
	if [ -s "$R"/tmp/seen ]; then
		while read -r l; do echo "seen: $l"; done < "$R"/tmp/seen
	fi
	# mana's messages (not the manarig.* command-line items), and kernel
	# warnings of any origin (WARN, BUG, oops, lockdep): a clean run has none.
	dmesg | awk 'tolower($0) ~ /mana/ && $0 !~ /manarig/ { print "dmesg: " $0 }
		/WARNING:|BUG:|Oops|Call Trace|general protection|possible circular locking|unable to handle|blocked for more than/ { w[++n] = $0 }
		END { for (i = 1; i <= n; i++) print "warning: " w[i] }'
	if [ "$DEBUG" = 1 ]; then
		echo "debug: kmemleak=$KMEMLEAK"
		case "$KMEMLEAK" in
		-|absent|disabled) ;;
		*) [ -f "$R"/tmp/kmemleak.txt ] && while read -r l; do echo "kmemleak: $l"; done < "$R"/tmp/kmemleak.txt ;;
		esac
		dmesg | awk "$KLOG_AWK"
	fi
	up
	echo "time report: $UP"
}

# A stage: the state now, under the name $1.
print_stage() {
	block_open
	{
		echo "MANARIG-STAGE-BEGIN $1"
		report_body
		echo "MANARIG-STAGE-END"
	} >&5
	block_close
}

# manarig.reprobe=1: the first probe as stage `first-probe`, `rmmod mana`,
# and the probe again.
reprobe() {
	print_stage first-probe
	read_hints
	rmmod "${LAST_MOD%.ko}" 2>"$R"/tmp/rmmod.err
	RMMOD_RC=$?
	up; T_RMMOD=$UP
	while read -r l; do echo "manarig: rmmod: $l"; done < "$R"/tmp/rmmod.err
	read_hints
	kmemleak_scan
	probe_and_settle
	read_hints
}

# manarig.offline_after / online_after: the probe as stage `probe`, then the
# CPUs off (stage `offline-after` when some come back) and on.
hotplug_after() {
	print_stage probe
	if [ -n "$OFFLINE_AFTER" ]; then
		set_cpus 0 "$OFFLINE_AFTER"
		[ -n "$ONLINE_AFTER" ] && print_stage offline-after
	fi
	[ -n "$ONLINE_AFTER" ] && set_cpus 1 "$ONLINE_AFTER"
}


# manarig.unload=1: the driver must still unload after what the device did to
# it. rmmod runs in the background (a driver that hangs in its remove path
# must not hang the agent) and wakes the wait through fd 3 when it returns.
unload_driver() {
	# The carrier now: what the device's link events (--inject link-down@S) left.
	[ -n "$NETDEV" ] && read -r CARRIER_UNLOAD < "$R/sys/class/net/$NETDEV/carrier" 2>/dev/null
	# The IRQ table as the driver left it: rmmod frees the vectors.
	snapshot_nic_irqs
	# The device's queues as the driver left them: rmmod destroys them before
	# the report begins, so the rig takes the device's status at this mark
	# instead (about a millisecond on the host) and then answers with its
	# go-ahead (guest-images/README.md, "Markers"): the rmmod never races that
	# read, and waits no longer than it takes.
	block_open
	stty -echo <&"$BLOCK_IN" 2>/dev/null
	up; T_UNLOAD_MARK=$UP
	echo "MANARIG-UNLOAD" >&5
	await_go_ahead
	up; T_UNLOAD_GO=$UP
	block_close
	UNLOAD_GO=$GO
	rm -f "$R"/tmp/unload.rc
	# EAGAIN ("Resource temporarily unavailable": the module's refcount is
	# not zero, e.g. the driver's own reset cycle after --inject reset@S is
	# still running) is tried again every second; the wait below bounds it
	# (a driver that never lets go counts as hung).
	(
		while :; do
			rmmod "${LAST_MOD%.ko}" 2>"$R"/tmp/unload.err
			RC=$?
			[ $RC -ne 0 ] && grep -q "temporarily unavailable" "$R"/tmp/unload.err && sleep 1 && continue
			break
		done
		echo "$RC" > "$R"/tmp/unload.rc; echo 2>/dev/null >&3
	) &
	UNLOAD_RC=hung
	# Its own UNLOAD_WAIT seconds even when the probe's wait used up the
	# deadline: a driver that gave up late must still get to unload.
	up; [ $((${UP%.*} + UNLOAD_WAIT)) -gt "$DEADLINE_AT" ] && DEADLINE_AT=$((${UP%.*} + UNLOAD_WAIT))
	while ! past_deadline; do
		[ -s "$R"/tmp/unload.rc ] && break
		nap
	done
	[ -s "$R"/tmp/unload.rc ] && read -r UNLOAD_RC < "$R"/tmp/unload.rc
	up; T_UNLOAD=$UP
}

# The report, between its markers.
print_report() {
	block_open
	{
		echo "MANARIG-REPORT-BEGIN $PROTOCOL_VERSION"
		report_body
		echo "MANARIG-REPORT-END"
	} >&5
	block_close
}

# The steps of the header, in order.
main() {
	# A busybox the host could not run to list its applets (an arm64 guest's
	# on an x86_64 host) comes without their links: it makes them itself (by
	# its own path: /proc/self/exe is not there yet).
	[ -e /bin/mount ] || /bin/busybox --install -s /bin
	mount -t proc proc /proc
	up; T_INIT=$UP
	parse_cmdline
	# manarig.pin=CPULIST (a speed-up): this shell, and so every process it
	# starts, runs on those CPUs only. Under TCG a fork placed on an idle vCPU
	# costs wake-up IPIs and TLB shootdowns between vCPUs that share the host's
	# cores. Nothing here moves an IRQ: the driver places its vectors by the NIC's
	# node, whichever CPU runs the probe.
	case "$PIN" in
	"") ;;
	*[!0-9,-]*) echo "manarig: manarig.pin=$PIN is not a cpulist; not pinned" ;;
	*) taskset -p -c "$PIN" $$ > /dev/null 2>&1 || echo "manarig: taskset -p -c $PIN failed; not pinned" ;;
	esac
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev 2>/dev/null
	# Debug kernels: kmemleak's control file is in debugfs.
	if [ "$DEBUG" = 1 ]; then
		mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
		KMEMLEAK=absent
		[ -w "$R"/sys/kernel/debug/kmemleak ] && KMEMLEAK=0
	fi
	DEADLINE_AT=$((${T_INIT%.*} + DEADLINE))
	nap_setup
	[ -n "$LOAD" ] && load_and_probe
	[ -n "$LOAD" ] && [ "$REPROBE" = 1 ] && reprobe
	[ -n "$LOAD" ] && [ -n "$OFFLINE_AFTER$ONLINE_AFTER" ] && hotplug_after
	[ -n "$LOAD" ] && [ -n "$SELFTESTS" ] && run_selftests
	[ -n "$LOAD" ] && run_traffic
	[ -n "$LOAD" ] && [ -n "$IRQBALANCE" ] && run_irqbalance
	# Debug kernels: every affinity_hint read once more (a hint mask freed while
	# its IRQ still points at it is a KASAN report), then kmemleak's last scan.
	[ "$DEBUG" = 1 ] && read_hints
	[ -n "$LOAD" ] && kmemleak_scan
	[ -n "$LOAD" ] && [ "$UNLOAD" = 1 ] && unload_driver
	print_report
	poweroff -f
}

[ -n "${MANARIG_AGENT_LIB-}" ] || main
