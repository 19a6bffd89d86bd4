/* confine-probe.c — makes each system call the command filter refuses (SECURITY.md A7) and
 * prints "NAME RESULT" per line: "ok", or the errno name ("EPERM"), or for the 32-bit entry
 * "absent" when the kernel has none. Arguments are harmless: a
 * call that gets through fails on them or does nothing lasting. Run as a command under the
 * agent, with and without the filter (test-agent-confine.c, tests/vm/test-vm-agent.sh).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static void
report (const char *name, long r)
{
        const char *e;

        if (r >= 0) {
                printf ("%s ok\n", name);
                return;
        }
        e = strerrorname_np (errno);
        printf ("%s %s\n", name, e ? e : "E?");
}

/* Closes what a call that got through returned. */
static void
report_fd (const char *name, long r)
{
        report (name, r);
        if (r >= 0)
                close ((int) r);
}

static long
clone_newuser (void)
{
        long r = syscall (SYS_clone, (unsigned long) (CLONE_NEWUSER | SIGCHLD), 0, 0, 0, 0);

        if (r == 0)
                _exit (0);
        if (r > 0)
                waitpid ((pid_t) r, NULL, 0);
        return r;
}

static sigjmp_buf int80_jump;

static void
on_int80_fault (int sig)
{
        siglongjmp (int80_jump, 1);
}

/* getpid through the 32-bit entry (20 is __NR_getpid for i386). A kernel without that entry
 * (ia32_emulation=0, some paravirtualised hosts) answers int $0x80 with SIGSEGV, before any
 * filter sees it: that prints "absent", for the tests to tell apart from "ok" and "EPERM". */
static void
report_int80 (void)
{
        struct sigaction sa = { .sa_handler = on_int80_fault }, old;

        sigemptyset (&sa.sa_mask);
        sigaction (SIGSEGV, &sa, &old);
        if (sigsetjmp (int80_jump, 1) == 0) {
                long r = 20;

                __asm__ volatile("int $0x80" : "+a"(r) : : "memory");
                if (r < 0 && r > -4096) {
                        errno = (int) -r;
                        r = -1;
                }
                report ("int80", r);
        } else {
                printf ("int80 absent\n");
        }
        sigaction (SIGSEGV, &old, NULL);
}

int
main (void)
{
        struct io_uring_params uring = { 0 };
        long r;

        report ("bpf", syscall (SYS_bpf, 0, NULL, 0));
        report_fd ("userfaultfd", syscall (SYS_userfaultfd, O_CLOEXEC | 1 /* user mode only */));
        report_fd ("perf_event_open", syscall (SYS_perf_event_open, NULL, 0, -1, -1, 0));
        report ("kexec_load", syscall (SYS_kexec_load, 0, 0, NULL, 0));
        report ("kexec_file_load", syscall (SYS_kexec_file_load, -1, -1, 0, NULL, 0));
        report ("init_module", syscall (SYS_init_module, NULL, 0, ""));
        report ("finit_module", syscall (SYS_finit_module, -1, "", 0));
        report ("delete_module", syscall (SYS_delete_module, "corral-probe-none", 0));
        report ("keyctl", syscall (SYS_keyctl, 0 /* GET_KEYRING_ID */, -3 /* session */, 0));
        report ("add_key", syscall (SYS_add_key, "user", "corral-probe", "x", 1, -2 /* process */));
        report ("request_key", syscall (SYS_request_key, "user", "corral-probe-none", NULL, 0));
        report ("mount", syscall (SYS_mount, NULL, "/nonexistent", NULL, 0, NULL));
        report ("umount2", syscall (SYS_umount2, "/nonexistent", 0));
        report ("pivot_root", syscall (SYS_pivot_root, "/nonexistent", "/nonexistent"));
        report_fd ("fsopen", syscall (SYS_fsopen, "corral-probe-none", 0));
        report ("fsconfig", syscall (SYS_fsconfig, -1, 0, NULL, NULL, 0));
        report ("fsmount", syscall (SYS_fsmount, -1, 0, 0));
        report ("fspick", syscall (SYS_fspick, -1, "", 0));
        report ("move_mount", syscall (SYS_move_mount, -1, "", -1, "", 0));
        report ("open_tree", syscall (SYS_open_tree, -1, "", 0));
        report ("mount_setattr", syscall (SYS_mount_setattr, -1, "", 0, NULL, 0));
        report ("swapon", syscall (SYS_swapon, "/nonexistent", 0));
        report ("swapoff", syscall (SYS_swapoff, "/nonexistent"));
        report ("setns", syscall (SYS_setns, -1, 0));
        report ("unshare", syscall (SYS_unshare, CLONE_NEWUSER));
        report ("clone", clone_newuser ());
        report ("clone3", syscall (SYS_clone3, NULL, 0));
        report_fd ("io_uring_setup", syscall (SYS_io_uring_setup, 1, &uring));
        report ("io_uring_enter", syscall (SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
        report ("io_uring_register", syscall (SYS_io_uring_register, -1, 0, NULL, 0));
        r = syscall (SYS_personality, READ_IMPLIES_EXEC);
        report ("personality", r);
        if (r >= 0)
                syscall (SYS_personality, (unsigned long) r);
        /* The old-ABI flag behind bit 31, and the query that must keep working. */
        r = syscall (SYS_personality, 0x80000000UL | READ_IMPLIES_EXEC);
        report ("personality-bit31", r);
        if (r >= 0)
                syscall (SYS_personality, (unsigned long) r);
        report ("personality-query", syscall (SYS_personality, 0xffffffffUL));
        report_fd ("socket", syscall (SYS_socket, AF_VSOCK, SOCK_STREAM, 0));
        report ("acct", syscall (SYS_acct, "/nonexistent"));
        report ("quotactl", syscall (SYS_quotactl, 0, NULL, 0, NULL));
        report ("lookup_dcookie", syscall (SYS_lookup_dcookie, 0, NULL, 0));
        report ("uselib", syscall (SYS_uselib, "/nonexistent"));
        report ("open_by_handle_at", syscall (SYS_open_by_handle_at, -1, NULL, 0));
        report ("syslog", syscall (SYS_syslog, 10 /* SIZE_BUFFER */, NULL, 0));
        report ("vhangup", syscall (SYS_vhangup));
        report ("iopl", syscall (SYS_iopl, 0));
        report ("ioperm", syscall (SYS_ioperm, 0, 0, 0));
        report_int80 ();
        /* Still allowed: an everyday call, and a plain socket. */
        report ("getpid", syscall (SYS_getpid));
        report_fd ("socket-unix", syscall (SYS_socket, AF_UNIX, SOCK_STREAM, 0));
        return 0;
}
