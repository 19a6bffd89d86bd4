/* spawner.c — the second wall installed once, not once per command (SECURITY.md A7, A8).
 *
 * Installing the seccomp filter, its listener and the Landlock domain in every new command cost
 * about 0.1 ms natively and 1.8 ms under TCG, most of an exec of /bin/true. A spawner is a
 * thread of the agent that installs them on itself once (confine_apply_self); the commands are
 * its clones (spawn.c's vfork-style child, handed over by pointer: the thread shares the
 * agent's memory) and inherit both from it. The agent's own thread stays unconfined.
 *
 * What stays as it was: a child of the spawner is a child of the agent's thread group, so
 * waitpid (-1) in the loop reaps it and SIGCHLD reaches the signalfd; the child still sets its
 * session, limits and user itself. What changes: one seccomp listener serves every command of
 * a spawner, so a refused call is counted for the command whose session made it (confine.c).
 *
 * Landlock domains only stack, so a spawner holds one ruleset: when the agent builds a new one
 * (another home, /workspace mounted again), a new spawner replaces the old, whose thread ends.
 * Its commands run on under the domain they started with (a thread's children are adopted by
 * another thread of the group; only a command that set PR_SET_PDEATHSIG on its parent, which
 * is not how that option is used, would see the parent go). Its listener stays until the last
 * of them is gone.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proc.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct Spawner {
        pthread_t thread;
        sem_t go, done; /* the agent posts go with a job (or quit), the thread posts done */
        uint64_t gen; /* Confine.ruleset_gen it was confined with; 0 without Landlock */
        const Confine *wall;
        int ruleset_fd;
        bool quit;
        int setup_err; /* 0: the thread is confined and waits for jobs */
        int listener; /* its seccomp listener, -1 when none (the plain filter) */

        /* the job: clone's arguments and what it returned */
        int (*fn) (void *);
        void *stack;
        int flags;
        void *arg;
        pid_t pid;
        int err;
};

static void
sem_wait_intr (sem_t *s)
{
        while (sem_wait (s) < 0 && errno == EINTR)
                ;
}

static void *
spawner_main (void *data)
{
        Spawner *s = data;

        if (confine_apply_self (s->wall, s->ruleset_fd, &s->listener) < 0)
                s->setup_err = errno > 0 ? errno : EIO;
        sem_post (&s->done);
        if (s->setup_err)
                return NULL;
        for (;;) {
                sem_wait_intr (&s->go);
                if (s->quit)
                        break;
                s->pid = clone (s->fn, s->stack, s->flags, s->arg);
                s->err = s->pid < 0 ? errno : 0;
                sem_post (&s->done);
        }
        return NULL;
}

void
spawner_free (Spawner *s)
{
        if (!s)
                return;
        s->quit = true;
        sem_post (&s->go);
        pthread_join (s->thread, NULL);
        sem_destroy (&s->go);
        sem_destroy (&s->done);
        free (s);
}

/* A confined thread for ruleset_fd, or NULL (logged) when none can run. */
static Spawner *
spawner_new (Agent *a, int ruleset_fd, uint64_t gen)
{
        Spawner *s = calloc (1, sizeof *s);
        sigset_t all, old;
        int r;

        if (!s)
                return NULL;
        s->gen = gen;
        s->wall = &a->confine;
        s->ruleset_fd = ruleset_fd;
        s->listener = -1;
        if (sem_init (&s->go, 0, 0) < 0 || sem_init (&s->done, 0, 0) < 0) {
                free (s);
                return NULL;
        }
        /* Every signal stays with the agent's own thread (its signalfd); the thread and the
         * clones it makes start with all of them blocked, as spawn.c's children expect. */
        sigfillset (&all);
        pthread_sigmask (SIG_BLOCK, &all, &old);
        r = pthread_create (&s->thread, NULL, spawner_main, s);
        pthread_sigmask (SIG_SETMASK, &old, NULL);
        if (r != 0) {
                agent_log ("cannot start the spawner: %s; each command confines itself",
                           strerror (r));
                sem_destroy (&s->go);
                sem_destroy (&s->done);
                free (s);
                return NULL;
        }
        sem_wait_intr (&s->done);
        if (s->setup_err) {
                agent_log ("cannot confine the spawner: %s; each command confines itself",
                           strerror (s->setup_err));
                spawner_free (s);
                return NULL;
        }
        if (s->listener >= 0)
                confine_watch_listener (a, s->listener);
        agent_debug ("spawner confined (ruleset %llu, %s)", (unsigned long long) gen,
                     s->listener >= 0 ? "refused calls reported" : "plain filter");
        return s;
}

bool
spawner_clone (Agent *a,
               int ruleset_fd,
               int (*fn) (void *),
               void *stack,
               int flags,
               void *arg,
               pid_t *ret_pid)
{
        Confine *c = &a->confine;
        uint64_t gen = ruleset_fd >= 0 ? c->ruleset_gen : 0;
        Spawner *s = c->spawner;

        if (!s || s->gen != gen) {
                spawner_free (s);
                s = c->spawner = spawner_new (a, ruleset_fd, gen);
                if (!s)
                        return false;
        }
        s->fn = fn;
        s->stack = stack;
        s->flags = flags;
        s->arg = arg;
        sem_post (&s->go);
        sem_wait_intr (&s->done);
        *ret_pid = s->pid < 0 ? -s->err : s->pid;
        return true;
}
