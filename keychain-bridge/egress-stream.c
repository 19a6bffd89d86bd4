/* egress-stream.c — the proxy fed by the guest: one byte stream (a virtio-serial port, or a
 * socketpair in tests) carrying a channel per connection (guest/netmux.h, NET-PROTOCOL.md).
 * Each channel the guest opens becomes a socketpair whose far end is served by the proxy like
 * any client connection, so every rule applies to it unchanged.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-proxy-private.h"
#include "netmux.h"

#include <errno.h>
#include <glib-unix.h>
#include <glib/gi18n.h>
#include <sys/socket.h>
#include <unistd.h>

struct _EgressStreamServer {
        CorralEgressProxy *proxy; /* borrowed: shutdown joins us first */
        int fd;
        int wake[2];
        GThread *thread;
};

static int
on_open (void *user, uint32_t channel)
{
        EgressStreamServer *s = user;
        g_autoptr (GSocket) sock = NULL;
        g_autoptr (GSocketConnection) conn = NULL;
        int sv[2];

        if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        sock = g_socket_new_from_fd (sv[1], NULL);
        if (!sock) {
                close (sv[0]);
                close (sv[1]);
                return -EIO;
        }
        conn = g_socket_connection_factory_create_connection (sock);
        corral_egress_proxy_handle (s->proxy, G_IO_STREAM (conn));
        return sv[0];
}

static gpointer
stream_main (gpointer data)
{
        EgressStreamServer *s = data;
        NetMux *m = NULL;
        int r = netmux_new (s->fd, on_open, s, &m);

        while (r == 0) {
                struct pollfd wake = { s->wake[0], POLLIN, 0 };

                r = netmux_poll (m, &wake, 1, -1);
                if (wake.revents)
                        break;
        }
        if (r < 0 && r != -EPIPE)
                g_warning ("egress stream: %s", g_strerror (-r));
        netmux_free (m);
        return NULL;
}

void
_egress_stream_server_free (EgressStreamServer *s)
{
        (void) !write (s->wake[1], "x", 1);
        g_thread_join (s->thread);
        close (s->wake[0]);
        close (s->wake[1]);
        close (s->fd);
        g_free (s);
}

gboolean
corral_egress_proxy_serve_stream (CorralEgressProxy *self, int fd, GError **error)
{
        EgressStreamServer *s = g_new0 (EgressStreamServer, 1);

        if (!g_unix_open_pipe (s->wake, FD_CLOEXEC, error)) {
                g_free (s);
                close (fd);
                return FALSE;
        }
        s->proxy = self;
        s->fd = fd;
        s->thread = g_thread_new ("egress-stream", stream_main, s);
        g_mutex_lock (&self->lock);
        g_ptr_array_add (self->streams, s);
        g_mutex_unlock (&self->lock);
        return TRUE;
}
