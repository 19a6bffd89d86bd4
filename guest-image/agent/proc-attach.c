/* proc-attach.c — attachments of processes to channels, their end, the session's end, and
 * lookups.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proc.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* exec.list shows at most this much of a command line per process (as JSON), so that the list
 * of 1024 processes always fits one frame; "truncated": true says when it was cut. */
#define DESCRIBE_BUDGET 512

/* Attachment channel ------------------------------------------------------------------------- */

static void
chan_data (Agent *a, Channel *c, unsigned stream, bool eof, const uint8_t *data, size_t n)
{
        Proc *p = c->owner;
        InChunk *k;

        if (!p->has_input || p->in_eof) {
                /* No stdin (or already ended): the bytes are consumed by dropping them. */
                channel_grant (a, c, n);
                return;
        }
        if (n > 0) {
                k = malloc (sizeof *k + n);
                if (!k) {
                        channel_grant (a, c, n);
                        return;
                }
                k->next = NULL;
                k->len = n;
                k->off = 0;
                memcpy (k->data, data, n);
                if (p->in_tail)
                        p->in_tail->next = k;
                else
                        p->in_head = k;
                p->in_tail = k;
        }
        if (eof) {
                p->in_eof = true;
                /* A terminal has no end of input; the EOF character is what a shell expects. */
                if (p->pty) {
                        k = malloc (sizeof *k + 1);
                        if (k) {
                                k->next = NULL;
                                k->len = 1;
                                k->off = 0;
                                k->data[0] = 0x04;
                                if (p->in_tail)
                                        p->in_tail->next = k;
                                else
                                        p->in_head = k;
                                p->in_tail = k;
                        }
                }
        }
        proc_write_input (a, p, p->pty ? p->out[0].fd : p->in.fd);
        proc_update (a, p);
}

static void
chan_pump (Agent *a, Channel *c)
{
        proc_update (a, c->owner);
}

static void
chan_drop (Agent *a, Channel *c, bool host_close)
{
        Proc *p = c->owner;

        /* Input not yet written belonged to this channel's credit. */
        proc_input_drop (p);
        p->chan = NULL;
        proc_set_interest (a, p);
}

static const ChannelOps exec_channel_ops = {
        .data = chan_data,
        .pump = chan_pump,
        .drop = chan_drop,
};

int
proc_attach (Agent *a, Proc *p, uint32_t channel)
{
        Channel *c;
        int r;

        r = channel_new (a, channel, &exec_channel_ops, p, &c);
        if (r < 0)
                return r;
        if (p->chan) {
                channel_abort (a, p->chan, true);
                p->chan = NULL;
        }
        p->chan = c;
        ring_cursor_head (&p->ring, &p->cur);
        p->eof_sent[0] = false;
        p->eof_sent[1] = p->pty; /* a PTY has only stream 1 */
        return 0;
}

void
proc_detach (Agent *a, Proc *p)
{
        Channel *c = p->chan;

        if (!c)
                return;
        chan_drop (a, c, false);
        channel_free (a, c);
}

/* Called after spawn: registers the fds. */
void
proc_start_io (Agent *a, Proc *p)
{
        for (unsigned i = 0; i < 2; i++)
                p->out_done[i] = p->out[i].fd < 0;
        p->eof_sent[1] = p->pty;
        proc_set_interest (a, p);
}

/* Ends, signals, sessions ------------------------------------------------------------------ */

void
proc_on_timeout (Agent *a, Timer *t)
{
        Proc *p = t->data;

        if (proc_finished (p))
                return;
        agent_debug ("proc %llu timed out", (unsigned long long) p->id);
        p->timed_out = true;
        proc_kill (p, SIGKILL);
}

void
procs_handle_sigchld (Agent *a)
{
        for (;;) {
                int status;
                pid_t pid = waitpid (-1, &status, WNOHANG);

                if (pid <= 0)
                        break;
                for (Proc *p = a->procs; p; p = p->next) {
                        if (p->pid == pid && !p->reaped) {
                                /* The timeout stays armed: group members may outlive the
                                 * leader and keep the output open. */
                                p->reaped = true;
                                p->wstatus = status;
                                agent_debug ("proc %llu (pid %d) ended, status 0x%x",
                                             (unsigned long long) p->id, (int) pid, status);
                                proc_update (a, p);
                                break;
                        }
                }
        }
}

void
procs_kill_foreground (Agent *a)
{
        for (Proc *p = a->procs; p; p = p->next)
                if (!p->background)
                        proc_kill (p, SIGKILL);
}

void
procs_session_end (Agent *a)
{
        Proc *p = a->procs;

        /* Channels are gone already (channels_drop_all detached every process). */
        while (p) {
                Proc *next = p->next;

                if (!p->background) {
                        proc_kill (p, SIGKILL);
                        p->orphan = true;
                }
                proc_update (a, p);
                p = next;
        }
}

void
procs_free_all (Agent *a)
{
        while (a->procs) {
                Proc *p = a->procs;

                a->procs = p->next;
                a->n_procs--;
                proc_free (a, p);
        }
}

Proc *
proc_lookup (Agent *a, uint64_t id)
{
        for (Proc *p = a->procs; p; p = p->next)
                if (p->id == id)
                        return p;
        return NULL;
}

Proc *
proc_param (Agent *a, uint64_t id, const cJSON *params)
{
        int64_t v;
        int r = proto_json_get_int (params, "proc", 1, (int64_t) PROTO_MAX_ID, &v);
        Proc *p;

        if (r < 0) {
                agent_respond_error (a, id, "invalid-request",
                                     r == -ENOENT ? "missing proc" : "invalid proc", 0);
                return NULL;
        }
        p = proc_lookup (a, (uint64_t) v);
        if (!p)
                agent_respond_error (a, id, "not-found", "no such process", 0);
        return p;
}

cJSON *
proc_describe (const Proc *p)
{
        cJSON *o = cJSON_CreateObject ();

        if (!o)
                return NULL;
        json_add_number (o, "proc", (double) p->id);
        json_add_number (o, "pid", p->pid);
        if (p->argv) {
                cJSON *arr = cJSON_AddArrayToObject (o, "argv");
                size_t budget = DESCRIBE_BUDGET;

                for (char **s = p->argv; arr && *s; s++) {
                        size_t cost = json_cost (*s, strlen (*s)) + 1;

                        if (cost > budget) {
                                cJSON_AddTrueToObject (o, "truncated");
                                break;
                        }
                        budget -= cost;
                        cJSON_AddItemToArray (arr, cJSON_CreateString (*s));
                }
        } else if (p->shell) {
                size_t n = strlen (p->shell);

                /* Cut by bytes; a cut inside a character shows as U+FFFD. */
                while (n > 0 && json_cost (p->shell, n) > DESCRIBE_BUDGET)
                        n = n > 64 ? n - n / 4 : n - 1;
                json_add_string_bytes (o, "shell", p->shell, n);
                if (n < strlen (p->shell))
                        cJSON_AddTrueToObject (o, "truncated");
        }
        cJSON_AddBoolToObject (o, "background", p->background);
        cJSON_AddBoolToObject (o, "running", !proc_finished (p));
        if (p->reaped)
                proc_add_status (o, p);
        cJSON_AddBoolToObject (o, "pty", p->pty);
        if (p->chan)
                json_add_number (o, "channel", p->chan->id);
        return o;
}
