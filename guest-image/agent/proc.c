/* proc.c — a running process's output, input, attachment and end.
 *
 * Output is read only when it can go somewhere: while attached, only when the channel has credit
 * and the outgoing queue has room (otherwise the child blocks on its full pipe); while detached,
 * always, into the ring buffer, whose size is fixed. Every byte read also goes into the ring.
 *
 * Lifetime: a process stays listed until the host has seen how it ended, i.e. until its
 * exec.exit event was sent to an attachment (a finished background process can be attached to
 * collect its output and end). Foreground processes of an ended session are killed and forgotten
 * once they finish.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proc.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

static uint8_t scratch[AGENT_READ_CHUNK];

static void on_out (Agent *a, Source *s, uint32_t events);
static void on_in (Agent *a, Source *s, uint32_t events);

Proc *
proc_new (Agent *a)
{
        Proc *p = calloc (1, sizeof *p);

        if (!p)
                return NULL;
        p->id = ++a->next_proc_id;
        source_init (&p->out[0], on_out, p);
        source_init (&p->out[1], on_out, p);
        source_init (&p->in, on_in, p);
        source_init (&p->notify, NULL, p); /* confine_take_listener sets the handler */
        timer_init (&p->timeout, proc_on_timeout, p);
        return p;
}

void
proc_input_drop (Proc *p)
{
        while (p->in_head) {
                InChunk *c = p->in_head;

                p->in_head = c->next;
                free (c);
        }
        p->in_tail = NULL;
}

/* Closes the input side; for a PTY that is the master's write half, which stays open. */
static void
input_close (Agent *a, Proc *p)
{
        proc_input_drop (p);
        p->has_input = false;
        source_close (a, &p->in);
}

void
proc_free (Agent *a, Proc *p)
{
        if (!p)
                return;
        proc_input_drop (p);
        source_close (a, &p->in);
        source_close (a, &p->out[0]);
        source_close (a, &p->out[1]);
        source_close (a, &p->notify);
        timer_stop (a, &p->timeout);
        ring_clear (&p->ring);
        a->ring_reserved -= p->ring.cap;
        if (p->argv)
                for (char **s = p->argv; *s; s++)
                        free (*s);
        free (p->argv);
        free (p->shell);
        free (p);
}

bool
proc_finished (const Proc *p)
{
        return p->reaped && p->out_done[0] && p->out_done[1];
}

static void
proc_forget (Agent *a, Proc *p)
{
        agent_debug ("proc %llu forgotten", (unsigned long long) p->id);
        if (p->chan) {
                channel_free (a, p->chan);
                p->chan = NULL;
        }
        if (p->prev)
                p->prev->next = p->next;
        else
                a->procs = p->next;
        if (p->next)
                p->next->prev = p->prev;
        a->n_procs--;
        proc_free (a, p);
}

void
proc_kill (Proc *p, int sig)
{
        /* The group id stays reserved while the unreaped leader or any member lives; members
         * that still hold the output pipes keep the process unfinished, so a finished process
         * is never signalled (its id may name another group by now). */
        if (!proc_finished (p))
                kill (-p->pid, sig);
}

void
proc_add_status (cJSON *obj, const Proc *p)
{
        if (WIFEXITED (p->wstatus))
                json_add_number (obj, "code", WEXITSTATUS (p->wstatus));
        else if (WIFSIGNALED (p->wstatus))
                json_add_number (obj, "signal", WTERMSIG (p->wstatus));
}

static void
send_exit (Agent *a, Proc *p)
{
        cJSON *ev = cJSON_CreateObject ();

        if (ev) {
                json_add_number (ev, "proc", (double) p->id);
                json_add_number (ev, "channel", p->chan->id);
                proc_add_status (ev, p);
                if (p->timed_out)
                        cJSON_AddTrueToObject (ev, "timed_out");
                confine_add_refused (ev, p);
        }
        agent_emit (a, "exec.exit", ev);
}

static unsigned
stream_of (unsigned idx)
{
        return idx == 0 ? PROTO_STREAM_STDOUT : PROTO_STREAM_STDERR;
}

/* Replays the ring to the attachment, then the EOFs and the exit event. Returns false when
 * the process was forgotten. */
static bool
pump (Agent *a, Proc *p)
{
        Channel *c = p->chan;
        const uint8_t *data;
        unsigned stream;
        size_t n;

        if (!c)
                return true;
        while (c->credit > 0 && !a->out_full && ring_peek (&p->ring, &p->cur, &stream, &data, &n)) {
                if (n > c->credit)
                        n = (size_t) c->credit;
                if (n > AGENT_READ_CHUNK)
                        n = AGENT_READ_CHUNK;
                agent_send_frame (a, PROTO_FRAME_DATA, (uint8_t) stream, c->id, data, n);
                ring_advance (&p->cur, n);
                c->credit -= n;
        }
        if (ring_peek (&p->ring, &p->cur, &stream, &data, &n))
                return true;
        for (unsigned i = 0; i < 2; i++) {
                if (p->out_done[i] && !p->eof_sent[i]) {
                        agent_send_frame (a, PROTO_FRAME_DATA,
                                          (uint8_t) (stream_of (i) | PROTO_DATA_EOF), c->id, NULL,
                                          0);
                        p->eof_sent[i] = true;
                }
        }
        if (p->reaped && p->eof_sent[0] && p->eof_sent[1]) {
                send_exit (a, p);
                proc_forget (a, p);
                return false;
        }
        return true;
}

static bool
caught_up (Proc *p)
{
        unsigned stream;
        const uint8_t *data;
        size_t n;

        return !ring_peek (&p->ring, &p->cur, &stream, &data, &n);
}

static bool
want_read (Agent *a, Proc *p)
{
        if (!p->chan)
                return true;
        return p->chan->credit > 0 && !a->out_full && caught_up (p);
}

void
proc_set_interest (Agent *a, Proc *p)
{
        bool input = p->in_head != NULL;
        bool rd = want_read (a, p);

        for (unsigned i = 0; i < 2; i++) {
                uint32_t ev = 0;

                if (p->out[i].fd < 0)
                        continue;
                if (rd)
                        ev |= EPOLLIN;
                if (i == 0 && p->pty && input)
                        ev |= EPOLLOUT;
                /* A parked source stays out of epoll until there is something to do. */
                if (ev || !p->out[i].parked)
                        source_set_events (a, &p->out[i], ev);
        }
        source_set_events (a, &p->in, input ? EPOLLOUT : 0);
}

void
proc_update (Agent *a, Proc *p)
{
        if (proc_finished (p))
                timer_stop (a, &p->timeout);
        if (p->chan && !pump (a, p))
                return;
        if (p->orphan && proc_finished (p)) {
                proc_forget (a, p);
                return;
        }
        proc_set_interest (a, p);
}

void
procs_update_all (Agent *a)
{
        Proc *p = a->procs;

        while (p) {
                Proc *next = p->next;

                proc_update (a, p);
                p = next;
        }
}

static void
output_done (Agent *a, Proc *p, unsigned i)
{
        source_close (a, &p->out[i]);
        p->out_done[i] = true;
        if (i == 0 && p->pty)
                input_close (a, p);
        if (p->out_done[0] && p->out_done[1])
                waiters_proc_done (a, p);
}

static void
read_output (Agent *a, Proc *p, unsigned i)
{
        size_t want = sizeof scratch;
        ssize_t n;

        if (p->chan && p->chan->credit < want)
                want = (size_t) p->chan->credit;
        n = read (p->out[i].fd, scratch, want);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                /* A PTY master reads EIO once the last slave fd is closed. */
                if (n < 0 && !(p->pty && errno == EIO))
                        agent_debug ("proc %llu: read: %s", (unsigned long long) p->id,
                                     strerror (errno));
                output_done (a, p, i);
                return;
        }
        ring_append (&p->ring, stream_of (i), scratch, (size_t) n);
        if (p->chan) {
                agent_send_frame (a, PROTO_FRAME_DATA, (uint8_t) stream_of (i), p->chan->id,
                                  scratch, (size_t) n);
                p->chan->credit -= (uint64_t) n;
                ring_cursor_tail (&p->ring, &p->cur);
        }
        waiters_feed (a, p, stream_of (i), scratch, (size_t) n);
}

void
proc_write_input (Agent *a, Proc *p, int fd)
{
        while (p->in_head) {
                InChunk *c = p->in_head;
                ssize_t n = write (fd, c->data + c->off, c->len - c->off);

                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return;
                        /* EPIPE: the child closed its input; what is pending is dropped. */
                        agent_debug ("proc %llu: stdin: %s", (unsigned long long) p->id,
                                     strerror (errno));
                        for (InChunk *k = p->in_head; k && p->chan; k = k->next)
                                channel_grant (a, p->chan, k->len - k->off);
                        input_close (a, p);
                        return;
                }
                c->off += (size_t) n;
                if (p->chan)
                        channel_grant (a, p->chan, (size_t) n);
                if (c->off < c->len)
                        return;
                p->in_head = c->next;
                if (!p->in_head)
                        p->in_tail = NULL;
                free (c);
        }
        if (p->in_eof && !p->pty)
                input_close (a, p);
}

static void
on_out (Agent *a, Source *s, uint32_t events)
{
        Proc *p = s->data;
        unsigned i = s == &p->out[0] ? 0 : 1;

        if (i == 0 && p->pty && (events & EPOLLOUT))
                proc_write_input (a, p, s->fd);
        if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                if (want_read (a, p))
                        read_output (a, p, i);
                else if (events & (EPOLLHUP | EPOLLERR))
                        /* A hang-up cannot be masked; the rest is read once there is room. */
                        source_park (a, s);
        }
        proc_update (a, p);
}

static void
on_in (Agent *a, Source *s, uint32_t events)
{
        Proc *p = s->data;

        if (events & EPOLLOUT)
                proc_write_input (a, p, s->fd);
        if ((events & (EPOLLHUP | EPOLLERR)) && p->in.fd >= 0) {
                /* The child closed its end of stdin. */
                for (InChunk *k = p->in_head; k && p->chan; k = k->next)
                        channel_grant (a, p->chan, k->len - k->off);
                input_close (a, p);
        }
        proc_update (a, p);
}
