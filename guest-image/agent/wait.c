/* wait.c — readiness waits: wait.port (a TCP connect succeeds) and wait.log (a line of a
 * process's output matches a regex). Both are session objects with a deadline.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define PORT_RETRY_MS 50
#define DEFAULT_TIMEOUT_MS 30000
#define MAX_REGEX 4096
#define MAX_LINE (16u * 1024u) /* longer lines are matched in pieces of this size */

typedef enum { WAIT_PORT, WAIT_LOG } WaitKind;

struct Waiter {
        Waiter *prev, *next;
        uint64_t id;
        WaitKind kind;
        Timer deadline;

        /* wait.port */
        Source sock;
        Timer retry;
        struct sockaddr_storage addr;
        socklen_t addrlen;

        /* wait.log */
        Proc *proc;
        Waiter *pnext;
        regex_t re;
        char *line[2]; /* partial line per output stream */
        size_t line_len[2];
};

static void
waiter_free (Agent *a, Waiter *w)
{
        if (w->prev)
                w->prev->next = w->next;
        else
                a->waiters = w->next;
        if (w->next)
                w->next->prev = w->prev;
        a->n_waiters--;
        timer_stop (a, &w->deadline);
        timer_stop (a, &w->retry);
        source_close (a, &w->sock);
        if (w->proc) {
                Waiter **pp = &w->proc->log_waiters;

                while (*pp && *pp != w)
                        pp = &(*pp)->pnext;
                if (*pp)
                        *pp = w->pnext;
                regfree (&w->re);
        }
        free (w->line[0]);
        free (w->line[1]);
        free (w);
}

void
waiters_free_all (Agent *a)
{
        while (a->waiters)
                waiter_free (a, a->waiters);
}

static void
on_deadline (Agent *a, Timer *t)
{
        Waiter *w = t->data;

        agent_respond_error (a, w->id, "timeout", "timed out", ETIMEDOUT);
        waiter_free (a, w);
}

static Waiter *
waiter_new (Agent *a, uint64_t id, WaitKind kind, int64_t timeout_ms)
{
        Waiter *w;

        if (a->n_waiters >= AGENT_MAX_WAITERS) {
                agent_respond_error (a, id, "busy", "too many waits", 0);
                return NULL;
        }
        w = calloc (1, sizeof *w);
        if (!w) {
                agent_respond_error (a, id, "internal", "out of memory", ENOMEM);
                return NULL;
        }
        w->id = id;
        w->kind = kind;
        timer_init (&w->deadline, on_deadline, w);
        timer_init (&w->retry, NULL, w);
        source_init (&w->sock, NULL, w);
        w->next = a->waiters;
        if (a->waiters)
                a->waiters->prev = w;
        a->waiters = w;
        a->n_waiters++;
        timer_start (a, &w->deadline, (uint64_t) timeout_ms);
        return w;
}

/* wait.port ---------------------------------------------------------------------------------- */

static void port_try (Agent *a, Waiter *w);

static void
port_retry (Agent *a, Timer *t)
{
        port_try (a, t->data);
}

static void
port_done (Agent *a, Waiter *w)
{
        agent_respond (a, w->id, NULL);
        waiter_free (a, w);
}

static void
on_port_sock (Agent *a, Source *s, uint32_t events)
{
        Waiter *w = s->data;
        int err = 0;
        socklen_t len = sizeof err;

        if (getsockopt (s->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                err = errno;
        if (err == 0) {
                port_done (a, w);
                return;
        }
        source_close (a, s);
        timer_start (a, &w->retry, PORT_RETRY_MS);
}

static void
port_try (Agent *a, Waiter *w)
{
        int fd = socket (w->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

        if (fd < 0) {
                timer_start (a, &w->retry, PORT_RETRY_MS);
                return;
        }
        if (connect (fd, (struct sockaddr *) &w->addr, w->addrlen) == 0) {
                close (fd);
                port_done (a, w);
                return;
        }
        if (errno == EINPROGRESS && source_add (a, &w->sock, fd, EPOLLOUT) == 0)
                return;
        close (fd);
        timer_start (a, &w->retry, PORT_RETRY_MS);
}

static bool
parse_host (const char *host, int64_t port, struct sockaddr_storage *ss, socklen_t *ret_len)
{
        struct sockaddr_in *in4 = (struct sockaddr_in *) ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;

        memset (ss, 0, sizeof *ss);
        /* No name resolution: it could block the loop. */
        if (strcmp (host, "localhost") == 0)
                host = "127.0.0.1";
        if (inet_pton (AF_INET, host, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons ((uint16_t) port);
                *ret_len = sizeof *in4;
                return true;
        }
        if (inet_pton (AF_INET6, host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons ((uint16_t) port);
                *ret_len = sizeof *in6;
                return true;
        }
        return false;
}

void
method_wait_port (Agent *a, uint64_t id, const cJSON *params)
{
        const char *host = "127.0.0.1";
        int64_t port, timeout = DEFAULT_TIMEOUT_MS;
        struct sockaddr_storage ss;
        socklen_t len;
        Waiter *w;

        if (int_param (a, id, params, "timeout_ms", 0, AGENT_MAX_TIMEOUT_MS, &timeout) < 0)
                return;
        if (proto_json_get_string (params, "host", 255, &host) == -EINVAL ||
            proto_json_get_int (params, "port", 1, 65535, &port) < 0 ||
            !parse_host (host, port, &ss, &len)) {
                agent_respond_error (a, id, "invalid-request",
                                     "host must be an IP address and port 1..65535", 0);
                return;
        }
        w = waiter_new (a, id, WAIT_PORT, timeout);
        if (!w)
                return;
        w->addr = ss;
        w->addrlen = len;
        w->retry.func = port_retry;
        w->sock.func = on_port_sock;
        port_try (a, w);
}

/* wait.log ----------------------------------------------------------------------------------- */

/* Returns true (and answers) when the line matches. */
static bool
line_check (Agent *a, Waiter *w, const char *line, size_t len)
{
        char *copy;
        bool match;

        if (len > 0 && line[len - 1] == '\r')
                len--;
        copy = strndup (line, len);
        if (!copy)
                return false;
        match = regexec (&w->re, copy, 0, NULL, 0) == 0;
        if (match) {
                cJSON *res = cJSON_CreateObject ();

                if (res)
                        json_add_string_bytes (res, "line", copy, strlen (copy));
                agent_respond (a, w->id, res);
        }
        free (copy);
        return match;
}

/* Feeds output bytes; true when a line matched (the waiter is then answered, not freed). */
static bool
feed (Agent *a, Waiter *w, unsigned stream, const uint8_t *data, size_t n)
{
        unsigned i = stream == PROTO_STREAM_STDERR ? 1 : 0;

        if (!w->line[i]) {
                w->line[i] = malloc (MAX_LINE);
                if (!w->line[i])
                        return false;
        }
        for (size_t k = 0; k < n; k++) {
                bool nl = data[k] == '\n';

                if (!nl)
                        w->line[i][w->line_len[i]++] = (char) data[k];
                if (nl || w->line_len[i] == MAX_LINE) {
                        size_t len = w->line_len[i];

                        w->line_len[i] = 0;
                        if (line_check (a, w, w->line[i], len))
                                return true;
                }
        }
        return false;
}

void
waiters_feed (Agent *a, Proc *p, unsigned stream, const uint8_t *data, size_t n)
{
        Waiter *w = p->log_waiters;

        while (w) {
                Waiter *next = w->pnext;

                if (feed (a, w, stream, data, n))
                        waiter_free (a, w);
                w = next;
        }
}

/* The output ended: a last line without a newline still counts. */
static void
finish (Agent *a, Waiter *w)
{
        for (unsigned i = 0; i < 2; i++) {
                if (w->line_len[i] > 0 && line_check (a, w, w->line[i], w->line_len[i])) {
                        waiter_free (a, w);
                        return;
                }
        }
        agent_respond_error (a, w->id, "not-found", "the output ended without a matching line", 0);
        waiter_free (a, w);
}

void
waiters_proc_done (Agent *a, Proc *p)
{
        while (p->log_waiters)
                finish (a, p->log_waiters);
}

/* Back-references can make matching exponential; everything else in ERE is fine. */
static bool
has_backref (const char *re)
{
        for (const char *s = re; *s; s++) {
                if (*s == '\\' && s[1]) {
                        if (s[1] >= '1' && s[1] <= '9')
                                return true;
                        s++;
                }
        }
        return false;
}

/* Replays the ring; true when the waiter was answered and freed. */
static bool
scan_ring (Agent *a, Waiter *w, Proc *p)
{
        RingCursor cur;
        unsigned stream;
        const uint8_t *data;
        size_t n;

        ring_cursor_head (&p->ring, &cur);
        while (ring_peek (&p->ring, &cur, &stream, &data, &n)) {
                if (feed (a, w, stream, data, n)) {
                        waiter_free (a, w);
                        return true;
                }
                ring_advance (&cur, n);
        }
        return false;
}

void
method_wait_log (Agent *a, uint64_t id, const cJSON *params)
{
        Proc *p = proc_param (a, id, params);
        const char *regex;
        int64_t timeout = DEFAULT_TIMEOUT_MS;
        Waiter *w;

        if (!p || int_param (a, id, params, "timeout_ms", 0, AGENT_MAX_TIMEOUT_MS, &timeout) < 0)
                return;
        if (proto_json_get_string (params, "regex", MAX_REGEX, &regex) < 0 || has_backref (regex)) {
                agent_respond_error (a, id, "invalid-request",
                                     "regex must be a POSIX extended regex of at most 4096 bytes "
                                     "without back-references",
                                     0);
                return;
        }
        w = waiter_new (a, id, WAIT_LOG, timeout);
        if (!w)
                return;
        if (regcomp (&w->re, regex, REG_EXTENDED | REG_NOSUB) != 0) {
                agent_respond_error (a, id, "invalid-request", "invalid regex", 0);
                waiter_free (a, w);
                return;
        }
        w->proc = p;
        w->pnext = p->log_waiters;
        p->log_waiters = w;
        /* The ring ends where live output continues, so a partial last line carries on. */
        if (scan_ring (a, w, p))
                return;
        if (p->out_done[0] && p->out_done[1])
                finish (a, w);
}
