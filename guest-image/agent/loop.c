/* loop.c — the epoll loop: fd sources, one timerfd multiplexing all timers, SIGCHLD/SIGTERM via
 * signalfd.
 *
 * One event is dispatched per epoll_wait call (frames queued meanwhile are written once nothing is
 * ready, see agent_run): a handler may free any object (a session end
 * frees channels, processes and watches), and the next epoll_wait only reports fds that are still
 * registered, so no handler ever runs for a freed object. Level-triggered readiness is reported
 * round-robin by the kernel, so this is fair.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent.h"
#include "proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

bool agent_verbose;

/* Queued frames are written at the latest after this many events or bytes. */
#define FLUSH_EVERY_EVENTS 8
#define FLUSH_BYTES (64 * 1024)

static void __attribute__ ((format (printf, 1, 0))) vlog (const char *fmt, va_list ap)
{
        fputs ("corral-agent: ", stderr);
        vfprintf (stderr, fmt, ap);
        fputc ('\n', stderr);
}

void
agent_log (const char *fmt, ...)
{
        va_list ap;

        va_start (ap, fmt);
        vlog (fmt, ap);
        va_end (ap);
}

void
agent_debug (const char *fmt, ...)
{
        va_list ap;

        if (!agent_verbose)
                return;
        va_start (ap, fmt);
        vlog (fmt, ap);
        va_end (ap);
}

void
source_init (Source *s, SourceFunc func, void *data)
{
        s->fd = -1;
        s->events = 0;
        s->parked = false;
        s->func = func;
        s->data = data;
}

int
source_add (Agent *a, Source *s, int fd, uint32_t events)
{
        struct epoll_event ev = { .events = events, .data.ptr = s };

        if (epoll_ctl (a->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
                return -errno;
        s->fd = fd;
        s->events = events;
        return 0;
}

void
source_set_events (Agent *a, Source *s, uint32_t events)
{
        struct epoll_event ev = { .events = events, .data.ptr = s };

        if (s->fd < 0 || s->events == events)
                return;
        if (s->parked) {
                if (epoll_ctl (a->epfd, EPOLL_CTL_ADD, s->fd, &ev) < 0) {
                        agent_log ("epoll_ctl(ADD, %d): %s", s->fd, strerror (errno));
                        return;
                }
                s->parked = false;
                s->events = events;
                return;
        }
        if (epoll_ctl (a->epfd, EPOLL_CTL_MOD, s->fd, &ev) < 0)
                agent_log ("epoll_ctl(MOD, %d): %s", s->fd, strerror (errno));
        else
                s->events = events;
}

void
source_park (Agent *a, Source *s)
{
        if (s->fd < 0 || s->parked)
                return;
        epoll_ctl (a->epfd, EPOLL_CTL_DEL, s->fd, NULL);
        s->parked = true;
        s->events = 0;
}

void
source_close (Agent *a, Source *s)
{
        if (s->fd < 0)
                return;
        /* Explicitly: a forked child may still share the file description for a moment. */
        if (!s->parked)
                epoll_ctl (a->epfd, EPOLL_CTL_DEL, s->fd, NULL);
        close (s->fd);
        s->fd = -1;
        s->events = 0;
        s->parked = false;
}

/* Timers --------------------------------------------------------------------------------------- */

uint64_t
agent_now_ms (void)
{
        struct timespec ts;

        clock_gettime (CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

void
timer_init (Timer *t, TimerFunc func, void *data)
{
        memset (t, 0, sizeof *t);
        t->func = func;
        t->data = data;
}

static void
timers_rearm (Agent *a)
{
        struct itimerspec its = { 0 };
        uint64_t min = UINT64_MAX;

        for (Timer *t = a->timers; t; t = t->next)
                if (t->deadline_ms < min)
                        min = t->deadline_ms;
        if (min != UINT64_MAX) {
                /* 0 would disarm; an expired deadline fires as soon as possible. */
                if (min == 0)
                        min = 1;
                its.it_value.tv_sec = (time_t) (min / 1000u);
                its.it_value.tv_nsec = (long) (min % 1000u) * 1000000l;
        }
        if (timerfd_settime (a->timer_src.fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
                agent_log ("timerfd_settime: %s", strerror (errno));
}

void
timer_stop (Agent *a, Timer *t)
{
        if (!t->armed)
                return;
        if (t->prev)
                t->prev->next = t->next;
        else
                a->timers = t->next;
        if (t->next)
                t->next->prev = t->prev;
        t->prev = t->next = NULL;
        t->armed = false;
        timers_rearm (a);
}

void
timer_start (Agent *a, Timer *t, uint64_t delay_ms)
{
        timer_stop (a, t);
        t->deadline_ms = agent_now_ms () + delay_ms;
        t->next = a->timers;
        t->prev = NULL;
        if (a->timers)
                a->timers->prev = t;
        a->timers = t;
        t->armed = true;
        timers_rearm (a);
}

static void
on_timerfd (Agent *a, Source *s, uint32_t events)
{
        uint64_t ticks, now;

        if (read (s->fd, &ticks, sizeof ticks) < 0 && errno != EAGAIN)
                agent_log ("timerfd read: %s", strerror (errno));
        now = agent_now_ms ();
        /* Restart the scan after each callback: it may start or stop any timer. */
        for (;;) {
                Timer *t = a->timers;

                while (t && t->deadline_ms > now)
                        t = t->next;
                if (!t)
                        break;
                timer_stop (a, t);
                t->func (a, t);
        }
        timers_rearm (a);
}

/* Signals -------------------------------------------------------------------------------------- */

static void
on_signal (Agent *a, Source *s, uint32_t events)
{
        struct signalfd_siginfo si[8];
        bool child = false;
        ssize_t n;

        /* Several at once: a short read means the queue is empty (one system call less per
         * command than reading until EAGAIN). */
        do {
                n = read (s->fd, si, sizeof si);
                for (ssize_t i = 0; n > 0 && i < n / (ssize_t) sizeof si[0]; i++) {
                        if (si[i].ssi_signo == SIGCHLD) {
                                child = true;
                        } else {
                                agent_log ("signal %u, exiting", si[i].ssi_signo);
                                a->quit = true;
                        }
                }
        } while (n == (ssize_t) sizeof si);
        /* Reap even when the signals coalesced into one read. */
        if (child)
                procs_handle_sigchld (a);
}

void
agent_loop_preinit (Agent *a)
{
        a->epfd = -1;
        source_init (&a->sig_src, on_signal, NULL);
        source_init (&a->timer_src, on_timerfd, NULL);
}

int
agent_loop_init (Agent *a)
{
        sigset_t mask;
        int fd, r;

        a->epfd = epoll_create1 (EPOLL_CLOEXEC);
        if (a->epfd < 0)
                return -errno;

        sigemptyset (&mask);
        sigaddset (&mask, SIGCHLD);
        sigaddset (&mask, SIGTERM);
        sigaddset (&mask, SIGINT);
        sigaddset (&mask, SIGHUP);
        if (sigprocmask (SIG_BLOCK, &mask, NULL) < 0)
                return -errno;
        signal (SIGPIPE, SIG_IGN);
        spawn_prepare ();

        fd = signalfd (-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (fd < 0)
                return -errno;
        r = source_add (a, &a->sig_src, fd, EPOLLIN);
        if (r < 0) {
                close (fd);
                return r;
        }

        fd = timerfd_create (CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (fd < 0)
                return -errno;
        r = source_add (a, &a->timer_src, fd, EPOLLIN);
        if (r < 0) {
                close (fd);
                return r;
        }
        return 0;
}

int
agent_run (Agent *a)
{
        unsigned unflushed = 0;
        bool blocked = false; /* the last flush left frames queued: on_out takes over */

        /* Frames are written when nothing else is ready, or once enough has queued: events that
         * come together, such as a command's two ends of output and its exit, then leave in one
         * write, and each write to a virtio port costs a VM exit. A failed flush can end the
         * agent (EOF on --fd / --stdio). */
        while (!a->quit) {
                struct epoll_event ev;
                bool pending;
                int n;

                if (!corral_outq_empty (&a->outq) && !blocked &&
                    (unflushed >= FLUSH_EVERY_EVENTS || a->outq.bytes >= FLUSH_BYTES)) {
                        transport_flush (a);
                        unflushed = 0;
                        blocked = !corral_outq_empty (&a->outq);
                }
                if (a->quit)
                        break;
                pending = !corral_outq_empty (&a->outq) && a->connected && !blocked;
                n = epoll_wait (a->epfd, &ev, 1, pending ? 0 : -1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        agent_log ("epoll_wait: %s", strerror (errno));
                        return -errno;
                }
                if (n == 0) {
                        transport_flush (a);
                        unflushed = 0;
                        blocked = !corral_outq_empty (&a->outq);
                        continue;
                }
                {
                        Source *src = ev.data.ptr;

                        src->func (a, src, ev.events);
                }
                unflushed++;
                if (corral_outq_empty (&a->outq))
                        blocked = false;
        }
        return 0;
}

void
agent_loop_clear (Agent *a)
{
        source_close (a, &a->sig_src);
        source_close (a, &a->timer_src);
        if (a->epfd >= 0)
                close (a->epfd);
        a->epfd = -1;
}
