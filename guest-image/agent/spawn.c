/* spawn.c — start of a requested process: new session and process group, optional PTY as
 * controlling terminal, resource limits, privilege drop, clean fds, signals and environment.
 *
 * Like glibc's posix_spawn, the child is a clone (CLONE_VM | CLONE_VFORK) running on its own
 * small stack: no page tables are copied and torn down again for every command, which is most of
 * what a fork costs here (measured with perf: dup_mmap + exit_mmap + COW faults were about a
 * third of the agent's time per exec). The parent is suspended until the child has called
 * execve or exited, so the child writes a failure (which step, errno) straight into the shared
 * SpawnChild record, and exec.start answers with the real error instead of exit code 127.
 * The child therefore only makes system calls, never allocates, and never touches agent state.
 * A confined command is cloned by the spawner thread (spawner.c), which is confined already;
 * that thread shares the agent's memory too, so the child is the same function, and it makes
 * raw system calls where glibc would act for the whole (now threaded) process (setuid's
 * signalling of every thread).
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
#include <sched.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

enum { STEP_SETUP, STEP_TTY, STEP_RLIMIT, STEP_USER, STEP_CHDIR, STEP_CONFINE, STEP_EXEC };

static const char *const step_names[] = {
        "setup", "controlling terminal", "resource limits",
        "user",  "working directory",    "confinement (seccomp, Landlock)",
        "exec"
};

static const int rlimit_ids[4] = { RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CPU };

#define CHILD_STACK_SIZE (256 * 1024)

typedef struct {
        const SpawnParams *sp;
        int fds[3];
        int slave;
        const char *path_env; /* PATH from sp->envp, for the search in the child */
        const sigset_t *reset; /* the signals to set back to SIG_DFL */
        int step; /* written by the child on failure */
        int err; /* 0: execve succeeded */
        bool listener_sent; /* the child sent a seccomp listener to the agent */
        bool preconfined; /* cloned by the spawner: the wall is inherited */
} SpawnChild;

static void __attribute__ ((noreturn)) child_fail (SpawnChild *c, int step)
{
        c->step = step;
        c->err = errno > 0 ? errno : EIO;
        _exit (127);
}

/* execvp with the child's own PATH (execvp would read the agent's environ), on the stack. */
static void
child_execvpe (SpawnChild *c, char **argv, char **envp)
{
        const char *path = c->path_env ? c->path_env : "/usr/local/bin:/usr/bin:/bin";
        size_t flen = strlen (argv[0]);
        int first_err = ENOENT;
        char buf[4096 + 256];

        if (strchr (argv[0], '/')) {
                execve (argv[0], argv, envp);
                return;
        }
        if (flen > 255) {
                errno = ENAMETOOLONG;
                return;
        }
        while (*path) {
                const char *end = strchrnul (path, ':');
                size_t dlen = (size_t) (end - path);

                if (dlen > 0 && dlen < 4096) {
                        memcpy (buf, path, dlen);
                        buf[dlen] = '/';
                        memcpy (buf + dlen + 1, argv[0], flen + 1);
                        execve (buf, argv, envp);
                        /* As execvp: remember a permission problem, keep looking past ENOENT. */
                        if (errno == EACCES)
                                first_err = EACCES;
                        else if (errno != ENOENT && errno != ENOTDIR)
                                return;
                }
                path = *end ? end + 1 : end;
        }
        errno = first_err;
}

static int
child (void *arg)
{
        SpawnChild *c = arg;
        const SpawnParams *sp = c->sp;
        sigset_t empty;

        if (setsid () < 0)
                child_fail (c, STEP_SETUP);
        if (sp->pty && ioctl (c->slave, TIOCSCTTY, 0) < 0)
                child_fail (c, STEP_TTY);
        /* All our fds are >= 3 (main() makes sure 0-2 are open), so dup2 cannot clobber. */
        for (int i = 0; i < 3; i++)
                if (dup2 (c->fds[i], i) < 0)
                        child_fail (c, STEP_SETUP);

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
                        child_fail (c, STEP_RLIMIT);
        }

        if (sp->change_user) {
                if (syscall (SYS_setgroups, (size_t) sp->n_groups, sp->groups) < 0 ||
                    syscall (SYS_setresgid, sp->gid, sp->gid, sp->gid) < 0 ||
                    syscall (SYS_setresuid, sp->uid, sp->uid, sp->uid) < 0)
                        child_fail (c, STEP_USER);
                /* Fail closed if the drop did not stick. */
                if (getuid () != sp->uid || geteuid () != sp->uid || getegid () != sp->gid) {
                        errno = EPERM;
                        child_fail (c, STEP_USER);
                }
        }

        if (chdir (sp->cwd) < 0 && (!sp->cwd_fallback || chdir ("/") < 0))
                child_fail (c, STEP_CHDIR);

        umask (022);
        for (int sig = 1; sig < NSIG; sig++)
                if (sigismember (c->reset, sig) == 1)
                        signal (sig, SIG_DFL);
        sigemptyset (&empty);
        sigprocmask (SIG_SETMASK, &empty, NULL);
        /* Everything but 0-2 closes on exec. */
        close_range (3, ~0u, CLOSE_RANGE_CLOEXEC);
        /* Last: the filter refuses nothing the steps above need, but keep it that way. */
        if (sp->confine && !c->preconfined &&
            confine_apply_child (sp->wall, sp->ruleset_fd, &c->listener_sent) < 0)
                child_fail (c, STEP_CONFINE);

        child_execvpe (c, sp->argv, sp->envp);
        child_fail (c, STEP_EXEC);
}

static const char *
env_lookup (char **envp, const char *key)
{
        size_t klen = strlen (key);

        for (char **e = envp; *e; e++)
                if (strncmp (*e, key, klen) == 0 && (*e)[klen] == '=')
                        return *e + klen + 1;
        return NULL;
}

/* The signals whose disposition in the agent is not the default: its own (SIGPIPE ignored) and
 * any ignore inherited from whoever started it. The loop sets dispositions once, before any
 * spawn, and spawn_prepare() reads them then; each child resets only these instead of making
 * one system call per signal (about 60, tens of microseconds each under TCG). */
static const sigset_t *
non_default_signals (void)
{
        static sigset_t set;
        static bool done;

        if (!done) {
                sigemptyset (&set);
                for (int sig = 1; sig < NSIG; sig++) {
                        struct sigaction sa;

                        if (sigaction (sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL)
                                sigaddset (&set, sig);
                }
                done = true;
        }
        return &set;
}

void
spawn_prepare (void)
{
        non_default_signals ();
}

/* One stack for all children: a child uses it only until execve, and CLONE_VFORK keeps the
 * agent suspended until then, so two children never share it. */
static void *
child_stack_top (void)
{
        static uint8_t *stack;

        if (!stack) {
                void *m = mmap (NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

                if (m == MAP_FAILED)
                        return NULL;
                stack = m;
        }
        return stack + CHILD_STACK_SIZE;
}

/* Returns the child's pid (its execve succeeded) or a negative errno with *ret_step set. */
static pid_t
clone_child (Agent *a, SpawnChild *c, int *ret_step)
{
        const int flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
        void *stack = child_stack_top ();
        sigset_t all, old;
        pid_t pid;

        if (!stack)
                return -ENOMEM;
        c->err = 0;
        c->listener_sent = false;
        /* Set before the child runs: it reads it. */
        c->preconfined = c->sp->confine;
        if (c->preconfined && !spawner_clone (a, c->sp->ruleset_fd, child, stack, flags, c, &pid))
                c->preconfined = false;
        if (!c->preconfined) {
                /* No agent signal handler may run on the child's side of the shared memory. */
                sigfillset (&all);
                sigprocmask (SIG_BLOCK, &all, &old);
                pid = clone (child, stack, flags, c);
                if (pid < 0)
                        pid = -errno;
                sigprocmask (SIG_SETMASK, &old, NULL);
        }
        if (pid < 0) {
                c->err = -pid;
                *ret_step = STEP_SETUP;
                return pid;
        }
        if (c->err != 0) {
                int status;

                while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
                        ;
                *ret_step = c->step;
                return -c->err;
        }
        return pid;
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

/* fd is an end of a pipe made here, whose status flags are known (access_mode: one F_SETFL
 * makes it non-blocking), or a PTY master that already is (access_mode < 0). Output is watched
 * at once; proc_set_interest changes that only when the host's queue is full. */
static void
add_source (Agent *a, Source *s, int fd, int access_mode, uint32_t events)
{
        int r = 0;

        if (access_mode >= 0 && fcntl (fd, F_SETFL, access_mode | O_NONBLOCK) < 0)
                r = -errno;
        if (r == 0)
                r = source_add (a, s, fd, events);
        if (r < 0) {
                /* The stream then counts as ended (proc_start_io). */
                agent_log ("cannot watch a child fd: %s", strerror (-r));
                close (fd);
        }
}

int
spawn_proc (Agent *a, Proc *p, const SpawnParams *sp, const char **ret_step)
{
        /* [0..1] stdout, [2..3] stderr, [4..5] stdin, [6] pty master, [7] slave */
        int fds[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };
        SpawnChild c = { .sp = sp, .slave = -1 };
        int step = STEP_SETUP, r;
        pid_t pid;

        if (sp->pty) {
                r = open_pty (sp, &fds[6], &fds[7]);
                if (r < 0)
                        return r;
                c.fds[0] = c.fds[1] = c.fds[2] = c.slave = fds[7];
        } else {
                if (pipe2 (fds, O_CLOEXEC) < 0 || pipe2 (fds + 2, O_CLOEXEC) < 0)
                        goto fail_errno;
                /* A bigger stdout pipe lets each wakeup move a whole read chunk instead of the
                 * default 64 KiB; the kernel caps it per user (pipe-user-pages-soft), and a
                 * refusal only costs speed. */
                (void) fcntl (fds[0], F_SETPIPE_SZ, (int) AGENT_READ_CHUNK);
                if (sp->use_stdin) {
                        if (pipe2 (fds + 4, O_CLOEXEC) < 0)
                                goto fail_errno;
                } else {
                        fds[4] = open ("/dev/null", O_RDONLY | O_CLOEXEC);
                        if (fds[4] < 0)
                                goto fail_errno;
                }
                c.fds[0] = fds[4];
                c.fds[1] = fds[1];
                c.fds[2] = fds[3];
        }
        c.path_env = env_lookup (sp->envp, "PATH");
        c.reset = non_default_signals ();

        pid = clone_child (a, &c, &step);

        /* Parent: drop the child's ends. */
        close_all (&fds[7], 1);
        close_all (&fds[1], 1);
        close_all (&fds[3], 1);
        if (!sp->use_stdin || sp->pty)
                close_all (&fds[4], 1);
        if (pid < 0) {
                if (c.listener_sent)
                        confine_take_listener (a, NULL);
                r = pid;
                *ret_step =
                        step_names[(unsigned) step % (sizeof step_names / sizeof step_names[0])];
                agent_debug ("spawn failed at %s: %s", *ret_step, strerror (-r));
                close_all (fds, 8);
                return r;
        }

        p->pid = pid;
        p->pty = sp->pty;
        if (c.listener_sent)
                confine_take_listener (a, p);
        if (sp->pty) {
                add_source (a, &p->out[0], fds[6], -1, EPOLLIN);
                p->has_input = p->out[0].fd >= 0;
        } else {
                add_source (a, &p->out[0], fds[0], O_RDONLY, EPOLLIN);
                add_source (a, &p->out[1], fds[2], O_RDONLY, EPOLLIN);
                if (sp->use_stdin) {
                        add_source (a, &p->in, fds[5], O_WRONLY, 0);
                        p->has_input = p->in.fd >= 0;
                }
        }
        return 0;

fail_errno:
        r = -errno;
        *ret_step = step_names[STEP_SETUP];
        close_all (fds, 8);
        return r;
}
