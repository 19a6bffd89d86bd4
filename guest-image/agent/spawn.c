/* spawn.c — fork + exec of a requested process: new session and process group, optional PTY as
 * controlling terminal, resource limits, privilege drop, clean fds, signals and environment.
 *
 * The child reports a failure before execve (which step, errno) through a CLOEXEC pipe, so that
 * exec.start answers with the real error instead of a process that exits with 127.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern char **environ;

enum { STEP_SETUP, STEP_TTY, STEP_RLIMIT, STEP_USER, STEP_CHDIR, STEP_EXEC };

static const char *const step_names[] = { "setup", "controlling terminal", "resource limits",
                                          "user",  "working directory",    "exec" };

static const int rlimit_ids[4] = { RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CPU };

static void __attribute__ ((noreturn)) child_fail (int errfd, int step)
{
        int msg[2] = { step, errno };

        /* Nothing useful can be done if this write fails; the exit code then says 127. */
        if (write (errfd, msg, sizeof msg) < 0)
                _exit (127);
        _exit (127);
}

static void __attribute__ ((noreturn))
child (const SpawnParams *sp, const int fds[3], int slave, int errfd)
{
        sigset_t empty;

        if (setsid () < 0)
                child_fail (errfd, STEP_SETUP);
        if (sp->pty && ioctl (slave, TIOCSCTTY, 0) < 0)
                child_fail (errfd, STEP_TTY);
        /* All our fds are >= 3 (main() makes sure 0-2 are open), so dup2 cannot clobber. */
        for (int i = 0; i < 3; i++)
                if (dup2 (fds[i], i) < 0)
                        child_fail (errfd, STEP_SETUP);

        for (int i = 0; i < 4; i++) {
                struct rlimit rl;

                if (sp->rlimit[i] >= 0) {
                        rl.rlim_cur = rl.rlim_max = (rlim_t) sp->rlimit[i];
                } else if (rlimit_ids[i] == RLIMIT_NOFILE) {
                        /* The agent raised its own limit; children get the original one. */
                        rl.rlim_cur = (rlim_t) sp->nofile_soft;
                        rl.rlim_max = (rlim_t) sp->nofile_hard;
                } else {
                        continue;
                }
                if (setrlimit (rlimit_ids[i], &rl) < 0)
                        child_fail (errfd, STEP_RLIMIT);
        }

        if (sp->change_user) {
                if (setgroups ((size_t) sp->n_groups, sp->groups) < 0 || setgid (sp->gid) < 0 ||
                    setuid (sp->uid) < 0)
                        child_fail (errfd, STEP_USER);
                /* Fail closed if the drop did not stick. */
                if (getuid () != sp->uid || geteuid () != sp->uid || getegid () != sp->gid) {
                        errno = EPERM;
                        child_fail (errfd, STEP_USER);
                }
        }

        if (chdir (sp->cwd) < 0 && (!sp->cwd_fallback || chdir ("/") < 0))
                child_fail (errfd, STEP_CHDIR);

        umask (022);
        for (int sig = 1; sig < NSIG; sig++)
                signal (sig, SIG_DFL);
        sigemptyset (&empty);
        sigprocmask (SIG_SETMASK, &empty, NULL);
        /* Everything but 0-2 closes on exec, including errfd (which is how success is told). */
        close_range (3, ~0u, CLOSE_RANGE_CLOEXEC);

        environ = sp->envp;
        execvp (sp->argv[0], sp->argv);
        child_fail (errfd, STEP_EXEC);
}

static int
open_pty (const SpawnParams *sp, int *ret_master, int *ret_slave)
{
        struct winsize ws = { .ws_row = sp->rows, .ws_col = sp->cols };
        char name[128];
        int master, slave;

        master = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0)
                return -errno;
        if (grantpt (master) < 0 || unlockpt (master) < 0 ||
            ptsname_r (master, name, sizeof name) != 0)
                goto fail;
        slave = open (name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (slave < 0)
                goto fail;
        if (ioctl (master, TIOCSWINSZ, &ws) < 0 || fd_set_nonblock (master) < 0) {
                close (slave);
                goto fail;
        }
        *ret_master = master;
        *ret_slave = slave;
        return 0;
fail : {
        int e = errno;

        close (master);
        return -e;
}
}

static void
close_all (int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (fds[i] >= 0)
                        close (fds[i]);
                fds[i] = -1;
        }
}

/* Blocking read of the child's report: EOF means execve succeeded. */
static int
read_child_report (int fd, int *ret_step)
{
        int msg[2];
        size_t got = 0;

        while (got < sizeof msg) {
                ssize_t n = read (fd, (char *) msg + got, sizeof msg - got);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                got += (size_t) n;
        }
        if (got < sizeof msg)
                return 0;
        *ret_step = msg[0];
        return msg[1] > 0 ? -msg[1] : -EIO;
}

static void
add_source (Agent *a, Source *s, int fd)
{
        int r = fd_set_nonblock (fd);

        if (r == 0)
                r = source_add (a, s, fd, 0);
        if (r < 0) {
                /* The stream then counts as ended (proc_start_io). */
                agent_log ("cannot watch a child fd: %s", strerror (-r));
                close (fd);
        }
}

int
spawn_proc (Agent *a, Proc *p, const SpawnParams *sp, const char **ret_step)
{
        /* [0..1] stdout, [2..3] stderr, [4..5] stdin, [6] pty master, [7] slave, [8..9] report */
        int fds[10] = { -1, -1, -1, -1, -1, -1, -1, -1, -1, -1 };
        int child_fds[3];
        int step = STEP_SETUP, r;
        pid_t pid;

        if (sp->pty) {
                r = open_pty (sp, &fds[6], &fds[7]);
                if (r < 0)
                        return r;
                child_fds[0] = child_fds[1] = child_fds[2] = fds[7];
        } else {
                if (pipe2 (fds, O_CLOEXEC) < 0 || pipe2 (fds + 2, O_CLOEXEC) < 0)
                        goto fail_errno;
                if (sp->use_stdin) {
                        if (pipe2 (fds + 4, O_CLOEXEC) < 0)
                                goto fail_errno;
                } else {
                        fds[4] = open ("/dev/null", O_RDONLY | O_CLOEXEC);
                        if (fds[4] < 0)
                                goto fail_errno;
                }
                child_fds[0] = fds[4];
                child_fds[1] = fds[1];
                child_fds[2] = fds[3];
        }
        if (pipe2 (fds + 8, O_CLOEXEC) < 0)
                goto fail_errno;

        pid = fork ();
        if (pid < 0)
                goto fail_errno;
        if (pid == 0)
                child (sp, child_fds, fds[7], fds[9]);

        /* Parent: drop the child's ends. */
        close_all (&fds[9], 1);
        close_all (&fds[7], 1);
        close_all (&fds[1], 1);
        close_all (&fds[3], 1);
        if (!sp->use_stdin || sp->pty)
                close_all (&fds[4], 1);
        r = read_child_report (fds[8], &step);
        close_all (&fds[8], 1);
        if (r < 0) {
                int status;

                while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
                        ;
                *ret_step = step_names[(unsigned) step % 6];
                agent_debug ("spawn failed at %s: %s", *ret_step, strerror (-r));
                close_all (fds, 10);
                return r;
        }

        p->pid = pid;
        p->pty = sp->pty;
        if (sp->pty) {
                add_source (a, &p->out[0], fds[6]);
                p->has_input = p->out[0].fd >= 0;
        } else {
                add_source (a, &p->out[0], fds[0]);
                add_source (a, &p->out[1], fds[2]);
                if (sp->use_stdin) {
                        add_source (a, &p->in, fds[5]);
                        p->has_input = p->in.fd >= 0;
                }
        }
        return 0;

fail_errno:
        r = -errno;
        *ret_step = step_names[STEP_SETUP];
        close_all (fds, 10);
        return r;
}
