/* egress-stream.c — the proxy fed by the guest: one byte stream (a virtio-serial port, or a
 * socketpair in tests) carrying a channel per connection (proto/netmux.h, NET-PROTOCOL.md).
 * Each channel the guest opens becomes a socketpair whose far end is served by the proxy like
 * any client connection, so every rule applies to it unchanged.
 *
 * With a guest session set, the stream also carries the session handshake: the host announces
 * itself with the event egress.reset and answers egress.hello with the session (proxy token,
 * placeholders, session CA). A VM's port is reached through QEMU's unix socket and reconnected
 * after a protocol error, until QEMU is gone.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-private.h"
#include "egress-proxy-private.h"
#include "netmux.h"

#include "corral-unix.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib/gi18n.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define RECONNECT_DELAY_MS 200
/* A guest that breaks its stream on purpose is reconnected every RECONNECT_DELAY_MS: only
 * the first errors go to the daemon's log, which would otherwise grow without bound. */
#define MAX_LOGGED_ERRORS 20

struct _EgressStreamServer {
        CorralEgressProxy *proxy; /* borrowed: shutdown joins us first */
        int fd;
        char *path; /* nullable: reconnect here after an error */
        char *session; /* nullable: the egress.hello result (JSON) */
        GMainContext *context;
        GSourceFunc on_end;
        gpointer on_end_data;
        int wake[2];
        GThread *thread;
        guint errors_logged;
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

/* egress.hello: a (new) guest proxy starts afresh; what the old one had open is gone. */
static cJSON *
on_request (void *user, NetMux *m, const char *method, const cJSON *params)
{
        EgressStreamServer *s = user;

        if (!s->session || strcmp (method, "egress.hello") != 0)
                return NULL;
        netmux_reset (m);
        return cJSON_Parse (s->session);
}

/* Serves one connection; TRUE when woken for shutdown. */
static gboolean
serve_one (EgressStreamServer *s)
{
        NetMux *m = NULL;
        gboolean woken = FALSE;
        int r = netmux_new (s->fd, on_open, s, &m);

        if (r == 0) {
                netmux_set_handlers (m, on_request, NULL, s);
                /* Tells a guest proxy that knew an earlier host to ask for the session again. */
                if (s->session)
                        r = netmux_event (m, "egress.reset", NULL);
        }
        while (r == 0) {
                struct pollfd wake = { s->wake[0], POLLIN, 0 };

                r = netmux_poll (m, &wake, 1, -1);
                if (wake.revents) {
                        woken = TRUE;
                        break;
                }
        }
        if (r < 0 && r != -EPIPE && s->errors_logged < MAX_LOGGED_ERRORS)
                g_warning ("egress stream: %s%s", g_strerror (-r),
                           ++s->errors_logged == MAX_LOGGED_ERRORS
                                   ? " (further stream errors are not logged)"
                                   : "");
        netmux_free (m);
        return woken;
}

static gpointer
stream_main (gpointer data)
{
        EgressStreamServer *s = data;

        for (;;) {
                struct pollfd wake = { s->wake[0], POLLIN, 0 };

                if (serve_one (s))
                        break;
                close (s->fd);
                s->fd = -1;
                /* The VM is gone when its socket is: then this stream ends. */
                if (!s->path || poll (&wake, 1, RECONNECT_DELAY_MS) != 0 ||
                    (s->fd = corral_unix_connect (s->path)) < 0)
                        break;
        }
        if (s->on_end)
                g_main_context_invoke (s->context, s->on_end, s->on_end_data);
        return NULL;
}

void
_egress_stream_server_free (EgressStreamServer *s)
{
        (void) !write (s->wake[1], "x", 1);
        g_thread_join (s->thread);
        close (s->wake[0]);
        close (s->wake[1]);
        if (s->fd >= 0)
                close (s->fd);
        g_free (s->path);
        g_free (s->session);
        g_main_context_unref (s->context);
        g_free (s);
}

static gboolean
start (CorralEgressProxy *self,
       int fd,
       const char *path,
       GSourceFunc on_end,
       gpointer on_end_data,
       GError **error)
{
        EgressStreamServer *s = g_new0 (EgressStreamServer, 1);

        if (!g_unix_open_pipe (s->wake, FD_CLOEXEC, error)) {
                g_free (s);
                close (fd);
                return FALSE;
        }
        s->proxy = self;
        s->fd = fd;
        s->path = g_strdup (path);
        s->context = g_main_context_ref_thread_default ();
        s->on_end = on_end;
        s->on_end_data = on_end_data;
        g_mutex_lock (&self->lock);
        s->session = g_strdup (self->guest_session);
        g_ptr_array_add (self->streams, s);
        g_mutex_unlock (&self->lock);
        s->thread = g_thread_new ("egress-stream", stream_main, s);
        return TRUE;
}

gboolean
corral_egress_proxy_serve_stream (CorralEgressProxy *self, int fd, GError **error)
{
        g_return_val_if_fail (CORRAL_IS_EGRESS_PROXY (self), FALSE);
        g_return_val_if_fail (fd >= 0, FALSE);

        return start (self, fd, NULL, NULL, NULL, error);
}

gboolean
corral_egress_proxy_connect_guest (CorralEgressProxy *self,
                                   const char *socket_path,
                                   GSourceFunc on_end,
                                   gpointer user_data,
                                   GError **error)
{
        int fd;

        g_return_val_if_fail (CORRAL_IS_EGRESS_PROXY (self), FALSE);
        g_return_val_if_fail (socket_path != NULL, FALSE);

        fd = corral_unix_connect (socket_path);
        if (fd < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (-fd),
                             _ ("Cannot reach the VM’s network port %s: %s"), socket_path,
                             g_strerror (-fd));
                return FALSE;
        }
        return start (self, fd, socket_path, on_end, user_data, error);
}

gboolean
corral_egress_proxy_set_guest_session (CorralEgressProxy *self,
                                       const char *token,
                                       const char *const *env_lines,
                                       const char *ca_pem,
                                       GError **error)
{
        g_autoptr (cJSON) result = cJSON_CreateObject ();
        cJSON *env = cJSON_AddObjectToObject (result, "env");
        g_autofree char *json = NULL;

        g_return_val_if_fail (CORRAL_IS_EGRESS_PROXY (self), FALSE);
        g_return_val_if_fail (token != NULL, FALSE);

        cJSON_AddNumberToObject (result, "version", 1);
        cJSON_AddStringToObject (result, "token", token);
        for (const char *const *e = env_lines; e && *e; e++) {
                g_autofree char *name = g_strdup (*e);
                char *eq = strchr (name, '=');

                if (!eq)
                        continue;
                *eq = '\0';
                cJSON_AddStringToObject (env, name, eq + 1);
        }
        if (ca_pem)
                cJSON_AddStringToObject (result, "ca", ca_pem);
        json = cJSON_PrintUnformatted (result);
        /* It must fit one frame, with room for the response envelope. */
        if (!json || strlen (json) > 60 * 1024) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE,
                             _ ("The guest session is too large (too many credentials)"));
                return FALSE;
        }
        g_mutex_lock (&self->lock);
        g_free (self->guest_session);
        self->guest_session = g_steal_pointer (&json);
        g_mutex_unlock (&self->lock);
        return TRUE;
}
