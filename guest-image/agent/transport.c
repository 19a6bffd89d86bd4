/* transport.c — the byte stream to the host: an inherited fd, stdio, a unix or vsock listener
 * (one connection at a time, a new one replaces the old) or a virtio-serial port (never closed;
 * the host may reconnect at any time).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define SERIAL_HUP_BACKOFF_MS 100

static void on_in (Agent *a, Source *s, uint32_t events);
static void on_out (Agent *a, Source *s, uint32_t events);

int
fd_set_nonblock (int fd)
{
        int fl = fcntl (fd, F_GETFL);

        if (fl < 0 || fcntl (fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

static int
fd_set_cloexec (int fd)
{
        int fl = fcntl (fd, F_GETFD);

        if (fl < 0 || fcntl (fd, F_SETFD, fl | FD_CLOEXEC) < 0)
                return -errno;
        return 0;
}

static bool
shared_fd (const Agent *a)
{
        return a->out_src.fd < 0;
}

void
transport_update_interest (Agent *a)
{
        uint32_t in = 0, out = corral_outq_empty (&a->outq) ? 0 : EPOLLOUT;

        if (!a->connected || a->hup_backoff)
                return;
        /* Stop reading requests while the queue is full: their answers would grow it. */
        if (!a->out_full)
                in = EPOLLIN;
        if (shared_fd (a)) {
                source_set_events (a, &a->in_src, in | out);
        } else {
                source_set_events (a, &a->in_src, in);
                source_set_events (a, &a->out_src, out);
        }
}

/* Attaches a connected stream. in and out may be the same fd. */
static int
conn_attach (Agent *a, int in, int out)
{
        int r;

        proto_decoder_reset (&a->dec);
        a->hup_backoff = false;
        r = source_add (a, &a->in_src, in, EPOLLIN);
        if (r < 0)
                return r;
        if (out != in) {
                r = source_add (a, &a->out_src, out, 0);
                if (r < 0) {
                        source_close (a, &a->in_src);
                        return r;
                }
        }
        a->connected = true;
        return 0;
}

static void
conn_detach (Agent *a)
{
        source_close (a, &a->in_src);
        source_close (a, &a->out_src);
        a->connected = false;
        agent_outq_clear (a);
}

/* End of the stream or a broken connection. */
static void
conn_lost (Agent *a, const char *why)
{
        switch (a->transport) {
        case TRANSPORT_FD:
        case TRANSPORT_STDIO:
                agent_debug ("host stream ended (%s), exiting", why);
                /* The host may have closed only its writing side: answers already made
                 * still go out. */
                agent_outq_drain (a, 1000);
                session_end (a, why);
                conn_detach (a);
                a->quit = true;
                break;
        case TRANSPORT_UNIX:
        case TRANSPORT_VSOCK:
                agent_debug ("connection lost (%s)", why);
                session_end (a, why);
                conn_detach (a);
                break;
        case TRANSPORT_SERIAL:
                /* The port stays open; the host reconnects and says HELLO again. Until then
                 * the port reports POLLHUP continuously, so look again after a pause. */
                if (!a->hup_backoff) {
                        if (!a->hup_logged)
                                agent_debug ("serial port: host side gone (%s)", why);
                        a->hup_logged = true;
                        source_park (a, &a->in_src);
                        a->hup_backoff = true;
                }
                timer_start (a, &a->hup_timer, SERIAL_HUP_BACKOFF_MS);
                break;
        }
}

static void
on_hup_timer (Agent *a, Timer *t)
{
        if (!a->hup_backoff)
                return;
        a->hup_backoff = false;
        transport_update_interest (a);
}

static void
framing_error (Agent *a, int r)
{
        /* The agent cannot close a virtio-serial port, so every transport resynchronises the same
         * way: the session ends and everything up to the next HELLO header is dropped. */
        agent_log ("framing error (%s), waiting for a new HELLO", strerror (-r));
        session_end (a, "framing error");
}

void
transport_process_input (Agent *a)
{
        if (!a->connected)
                return;
        while (!a->quit && a->connected && !a->out_full) {
                ProtoFrame f;
                int r;

                r = proto_decoder_next_resync (&a->dec, &f);
                if (r == 0)
                        break;
                if (r < 0) {
                        framing_error (a, r);
                        continue;
                }
                session_handle_frame (a, &f);
        }
}

static void
on_in (Agent *a, Source *s, uint32_t events)
{
        if (events & EPOLLIN) {
                size_t room;
                uint8_t *p = proto_decoder_space (&a->dec, &room);
                ssize_t n;

                if (room == 0) {
                        /* Only a full buffer of unprocessed frames; take them first. */
                        transport_process_input (a);
                        return;
                }
                n = read (s->fd, p, room);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return;
                        conn_lost (a, strerror (errno));
                        return;
                }
                if (n == 0) {
                        conn_lost (a, "end of stream");
                        return;
                }
                proto_decoder_commit (&a->dec, (size_t) n);
                a->hup_logged = false;
                transport_process_input (a);
        } else if (events & (EPOLLHUP | EPOLLERR)) {
                if (!shared_fd (a) && !(s->events & EPOLLIN)) {
                        /* Reading is paused and a hang-up cannot be masked: park the fd until
                         * the queue drains, then read what is left. */
                        source_park (a, s);
                        return;
                }
                conn_lost (a, "hang-up");
                return;
        }
        if (a->connected && shared_fd (a) && (events & EPOLLOUT)) {
                int r = agent_outq_flush (a);

                if (r < 0)
                        conn_lost (a, strerror (-r));
        }
}

void
transport_flush (Agent *a)
{
        int r;

        if (!a->connected || corral_outq_empty (&a->outq))
                return;
        r = agent_outq_flush (a);
        if (r < 0)
                conn_lost (a, strerror (-r));
}

static void
on_out (Agent *a, Source *s, uint32_t events)
{
        int r;

        if (events & (EPOLLHUP | EPOLLERR)) {
                conn_lost (a, "output closed");
                return;
        }
        r = agent_outq_flush (a);
        if (r < 0)
                conn_lost (a, strerror (-r));
}

/* Over vsock only the host may talk to the agent: a process inside the guest could otherwise
 * reach it through vsock loopback. */
static bool
peer_allowed (Agent *a, int fd)
{
        struct sockaddr_vm svm = { 0 };
        socklen_t len = sizeof svm;

        if (a->transport != TRANSPORT_VSOCK)
                return true;
        if (getpeername (fd, (struct sockaddr *) &svm, &len) < 0 || svm.svm_family != AF_VSOCK ||
            svm.svm_cid != VMADDR_CID_HOST) {
                agent_log ("vsock connection from cid %u refused", svm.svm_cid);
                return false;
        }
        return true;
}

static void
on_accept (Agent *a, Source *s, uint32_t events)
{
        int fd = accept4 (s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        int r;

        if (fd < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        agent_log ("accept: %s", strerror (errno));
                return;
        }
        if (!peer_allowed (a, fd)) {
                close (fd);
                return;
        }
        if (a->connected) {
                agent_debug ("new connection replaces the old one");
                session_end (a, "replaced by a new connection");
                conn_detach (a);
        }
        r = conn_attach (a, fd, fd);
        if (r < 0) {
                agent_log ("cannot use connection: %s", strerror (-r));
                close (fd);
        }
}

static int
listen_unix (const char *path)
{
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        mode_t old_mask;
        int fd, r;

        if (strlen (path) >= sizeof sun.sun_path)
                return -ENAMETOOLONG;
        strcpy (sun.sun_path, path);
        fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* A stale socket from an earlier run; anything else at the path is kept. */
        {
                struct stat st;

                if (lstat (path, &st) == 0 && S_ISSOCK (st.st_mode))
                        unlink (path);
        }
        /* Whoever connects runs commands as root: the socket is the agent's owner's only. */
        old_mask = umask (0177);
        r = bind (fd, (struct sockaddr *) &sun, sizeof sun);
        umask (old_mask);
        if (r < 0 || listen (fd, 4) < 0) {
                int e = errno;

                close (fd);
                return -e;
        }
        return fd;
}

static int
listen_vsock (const char *port_text)
{
        struct sockaddr_vm svm = { .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY };
        char *end;
        unsigned long port;
        int fd;

        errno = 0;
        port = strtoul (port_text, &end, 10);
        if (errno || *end || end == port_text || port > UINT32_MAX)
                return -EINVAL;
        svm.svm_port = (unsigned) port;
        fd = socket (AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (bind (fd, (struct sockaddr *) &svm, sizeof svm) < 0 || listen (fd, 4) < 0) {
                int e = errno;

                close (fd);
                return -e;
        }
        return fd;
}

static int
start_listener (Agent *a, int fd)
{
        int r;

        if (fd < 0)
                return fd;
        r = source_add (a, &a->listen_src, fd, EPOLLIN);
        if (r < 0)
                close (fd);
        return r;
}

static int
start_stream (Agent *a, int in, int out)
{
        int r;

        if (fd_set_nonblock (in) < 0 || fd_set_nonblock (out) < 0 || fd_set_cloexec (in) < 0 ||
            fd_set_cloexec (out) < 0)
                return -errno;
        r = conn_attach (a, in, out);
        return r;
}

void
transport_init (Agent *a)
{
        source_init (&a->listen_src, on_accept, NULL);
        source_init (&a->in_src, on_in, NULL);
        source_init (&a->out_src, on_out, NULL);
        timer_init (&a->hup_timer, on_hup_timer, NULL);
}

int
transport_start (Agent *a)
{
        int r, fd;

        r = proto_decoder_init (&a->dec, 0);
        if (r < 0)
                return r;

        switch (a->transport) {
        case TRANSPORT_FD:
                return start_stream (a, a->opt_fd, a->opt_fd);
        case TRANSPORT_STDIO:
                return start_stream (a, STDIN_FILENO, STDOUT_FILENO);
        case TRANSPORT_UNIX:
                return start_listener (a, listen_unix (a->address));
        case TRANSPORT_VSOCK:
                return start_listener (a, listen_vsock (a->address));
        case TRANSPORT_SERIAL:
                fd = open (a->address, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
                if (fd < 0)
                        return -errno;
                r = conn_attach (a, fd, fd);
                if (r < 0)
                        close (fd);
                return r;
        }
        return -EINVAL;
}

void
transport_stop (Agent *a)
{
        timer_stop (a, &a->hup_timer);
        a->hup_backoff = false;
        conn_detach (a);
        source_close (a, &a->listen_src);
        if (a->transport == TRANSPORT_UNIX && a->address)
                unlink (a->address);
        proto_decoder_clear (&a->dec);
}
