/* bench-vm-qemu.h — plain QEMU (TCG) for the VM benchmarks: one VM at a time, its serial console
 * read through a pipe, killed on every exit path (also if the benchmark dies: PR_SET_PDEATHSIG).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

#include "corral-vmm.h"

typedef struct {
        GSubprocess *proc;
        GString *console;
        guint console_source;
        char *dir; /* private temp dir: sockets */
        char *agent_sock; /* NULL unless started with the agent port */
        char *qga_sock; /* NULL unless started with the qemu-ga port */
        double t_start; /* bench_now() just before spawning */
        const char *watch; /* optional: a console marker to timestamp as it arrives */
        double watch_time; /* bench_now() when watch was first seen, else 0 */
} BenchVm;

/* Starts qemu-system-x86_64 -machine q35,accel=tcg -m 512 -smp 2 -nodefaults ... -kernel
 * -initrd -append, plus a virtio-serial device with the Corral agent port and/or the
 * org.qemu.guest_agent.0 port on unix sockets (server=on,wait=off). Aborts on failure. */
void bench_vm_start (BenchVm *vm,
                     const char *kernel,
                     const char *initrd,
                     const char *append,
                     gboolean agent_port,
                     gboolean qga_port);
/* The same with more QEMU arguments (devices, drives, memory backends), appended as given. */
void bench_vm_start_full (BenchVm *vm,
                          const char *kernel,
                          const char *initrd,
                          const char *append,
                          gboolean agent_port,
                          gboolean qga_port,
                          const char *const *extra);
/* Iterates the main context until the console contains marker; returns bench_now() at that
 * moment. Aborts (after killing QEMU) on timeout or if QEMU exits. */
double bench_vm_wait_console (BenchVm *vm, const char *marker, double timeout_s);
/* Kills QEMU (SIGKILL), reaps it, removes the sockets. Safe to call twice. */
void bench_vm_stop (BenchVm *vm);

/* Connects to a unix socket, retrying every 2 ms for up to timeout_s; -1 on timeout. */
int bench_vm_unix_connect (const char *path, double timeout_s);

/* Writes initrd + padding + an uncompressed newc archive adding the executable /bench-init
 * (a shell script printing marker, then sleeping) to a new file in dir; returns its path. */
char *bench_vm_marker_initrd (const char *initrd, const char *dir, const char *marker);

/* The minimal image's folder (vmlinuz, initramfs.img), built with guest-image/minimal/build-minimal
 * [--with-qemu-ga] unless cached, or $CORRAL_BENCH_VM_IMAGE[_QGA]. (transfer full) */
char *bench_vm_minimal_image (gboolean with_qga);

/* Connects a client to the VM's agent port (waiting for the guest to boot; handshake
 * included). Aborts, killing QEMU, if the agent never answers. */
CorralAgentClient *bench_vm_connect_agent (BenchVm *vm);
/* Runs spec in the guest and returns the result; aborts (killing QEMU) on failure or a
 * non-zero exit, printing the command's stderr. */
CorralRunResult *
bench_vm_run (CorralAgentClient *client, BenchVm *vm, CorralExecSpec *spec, gsize max_output);
