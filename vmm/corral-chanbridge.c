/* corral-chanbridge — a remote VM's virtio-serial ports and serial console, made local.
 *
 *   corral-chanbridge --uri URI --domain DOMAIN --lock PATH [--console PATH] CHANNEL=SOCKET_PATH...
 *
 * Locally QEMU listens on unix sockets in the VM's folder and the host programs connect to them.
 * When libvirt runs on another machine those sockets are over there, so this listens on local
 * unix sockets instead and joins each accepted connection to its port through
 * virDomainOpenChannel(). Like QEMU's own chardev it serves one client per port at a time; the
 * next one waits in the backlog. --console appends the serial console (a pty over there) to a
 * local file, as a local VM's serial file would be. One bridge per VM (--lock). It exits, removing
 * its sockets, when the domain stops, the connection closes, or on SIGTERM/SIGINT.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "corral-unix.h"

#define BUF_SIZE (256u * 1024u) /* per port and direction: the most we hold for a slow side */
#define STREAM_CHUNK (64u * 1024u) /* at most this much per libvirt stream message */
#define CONSOLE_MAX ((off_t) 16 << 20)
#define CHANNEL_NAME_MAX 64
#define SUN_PATH_SIZE sizeof (((struct sockaddr_un *) NULL)->sun_path)
#define STREAM_ALWAYS (VIR_STREAM_EVENT_ERROR | VIR_STREAM_EVENT_HANGUP)

typedef struct Bridge Bridge;

typedef struct {
        guint8 *data;
        size_t off, len; /* the bytes waiting are data[off .. off + len) */
} Buf;

typedef struct {
        Bridge *b;
        char *name; /* the port, e.g. org.corral.agent.0 */
        char *path; /* our socket */
        dev_t dev; /* of the socket we bound: we unlink only that one */
        ino_t ino;
        int listen_fd;
        guint listen_id;
        int client_fd;
        guint client_id;
        GIOCondition client_cond;
        virStreamPtr st;
        int st_events;
        Buf to_client, to_stream;
        gboolean client_eof; /* read() saw the end: deliver to_stream, then finish */
        gboolean client_deaf; /* writing failed: what the port says is dropped */
        gboolean client_dead; /* reading failed: abort */
        gboolean stream_done; /* EOF or error: deliver to_client, then close */
        gboolean stream_failed;
} Channel;

struct Bridge {
        GMainLoop *loop;
        gboolean quitting;
        virConnectPtr conn;
        virDomainPtr dom;
        int lifecycle_id;
        gboolean close_cb;
        GPtrArray *channels; /* Channel */
        virStreamPtr console_st;
        int console_fd;
        off_t console_size;
};

static void say (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

static void
say (const char *fmt, ...)
{
        g_autofree char *msg = NULL;
        va_list ap;

        va_start (ap, fmt);
        msg = g_strdup_vprintf (fmt, ap);
        va_end (ap);
        g_printerr ("corral-chanbridge: %s\n", msg);
}

static const char *
libvirt_message (void)
{
        const char *msg = virGetLastErrorMessage ();

        return msg ? msg : "unknown libvirt error";
}

static void
ignore_libvirt_error (void *data, virErrorPtr error)
{
        /* Reported once, where it matters; libvirt's default handler would print every one. */
}

static void
bridge_quit (Bridge *b, const char *why)
{
        if (b->quitting)
                return;
        b->quitting = TRUE;
        say ("%s; exiting", why);
        g_main_loop_quit (b->loop);
}

/* Buffers ------------------------------------------------------------------------------------- */

/* Where the next bytes go, and how many fit; compacts when only the front has room. */
static guint8 *
buf_tail (Buf *buf, size_t *ret_space)
{
        if (buf->len == 0)
                buf->off = 0;
        else if (buf->off > 0 && buf->off + buf->len == BUF_SIZE) {
                memmove (buf->data, buf->data + buf->off, buf->len);
                buf->off = 0;
        }
        *ret_space = BUF_SIZE - buf->off - buf->len;
        return buf->data + buf->off + buf->len;
}

static void
buf_consume (Buf *buf, size_t n)
{
        buf->off += n;
        buf->len -= n;
}

/* One connection: client socket ⇄ libvirt stream ------------------------------------------------ */

static void channel_listen (Channel *c);

static void
client_flush (Channel *c)
{
        while (c->to_client.len > 0) {
                ssize_t n = send (c->client_fd, c->to_client.data + c->to_client.off,
                                  c->to_client.len, MSG_NOSIGNAL | MSG_DONTWAIT);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (n < 0) {
                        /* Gone or shut for reading; what it sent before may still be unread. */
                        c->client_deaf = TRUE;
                        c->to_client.len = 0;
                        return;
                }
                buf_consume (&c->to_client, (size_t) n);
        }
}

static void
client_fill (Channel *c)
{
        size_t space;
        guint8 *p = buf_tail (&c->to_stream, &space);
        ssize_t n;

        if (space == 0)
                return;
        do
                n = read (c->client_fd, p, space);
        while (n < 0 && errno == EINTR);
        if (n > 0)
                c->to_stream.len += (size_t) n;
        else if (n == 0)
                c->client_eof = TRUE;
        else if (errno != EAGAIN && errno != EWOULDBLOCK)
                c->client_dead = TRUE;
}

static void
stream_failed (Channel *c, const char *what)
{
        say ("%s: %s failed: %s", c->name, what, libvirt_message ());
        c->stream_done = TRUE;
        c->stream_failed = TRUE;
}

static void
stream_flush (Channel *c)
{
        while (c->to_stream.len > 0 && !c->stream_done) {
                size_t chunk = MIN (c->to_stream.len, STREAM_CHUNK);
                int n = virStreamSend (c->st, (const char *) c->to_stream.data + c->to_stream.off,
                                       chunk);

                if (n == -2)
                        return;
                if (n < 0) {
                        stream_failed (c, "sending");
                        return;
                }
                buf_consume (&c->to_stream, (size_t) n);
        }
}

static void
stream_fill (Channel *c)
{
        while (!c->stream_done) {
                size_t space;
                guint8 *p = buf_tail (&c->to_client, &space);
                int n;

                if (space == 0)
                        return;
                n = virStreamRecv (c->st, (char *) p, MIN (space, STREAM_CHUNK));
                if (n == -2)
                        return;
                if (n == 0)
                        c->stream_done = TRUE;
                else if (n < 0)
                        stream_failed (c, "receiving");
                else
                        c->to_client.len += (size_t) n;
        }
}

static void
stream_close (virStreamPtr st, gboolean graceful)
{
        virStreamEventRemoveCallback (st);
        if (!graceful || virStreamFinish (st) < 0)
                virStreamAbort (st);
        virStreamFree (st);
}

static void
channel_disconnect (Channel *c)
{
        if (c->st)
                stream_close (c->st, !c->stream_failed && !c->client_dead);
        c->st = NULL;
        g_clear_handle_id (&c->client_id, g_source_remove);
        c->client_cond = 0;
        if (c->client_fd >= 0)
                close (c->client_fd);
        c->client_fd = -1;
        c->to_client.len = c->to_stream.len = 0;
        if (!c->b->quitting)
                channel_listen (c);
}

static gboolean
channel_finished (const Channel *c)
{
        if (c->client_dead)
                return TRUE;
        if (c->stream_done)
                return c->to_client.len == 0;
        return c->client_eof && c->to_stream.len == 0;
}

static gboolean on_client (int fd, GIOCondition cond, gpointer user_data);

/* Ask for what each side can take: a full buffer stops reading the side that fills it. */
static void
channel_watch (Channel *c)
{
        int events = STREAM_ALWAYS;
        GIOCondition cond = 0;

        if (c->to_client.len < BUF_SIZE)
                events |= VIR_STREAM_EVENT_READABLE;
        if (c->to_stream.len > 0)
                events |= VIR_STREAM_EVENT_WRITABLE;
        if (c->stream_done)
                events = 0; /* a remote stream at EOF stays readable: it would spin */
        if (events != c->st_events) {
                virStreamEventUpdateCallback (c->st, events);
                c->st_events = events;
        }

        if (!c->client_eof && c->to_stream.len < BUF_SIZE)
                cond |= G_IO_IN;
        if (c->to_client.len > 0)
                cond |= G_IO_OUT;
        if (cond != c->client_cond) {
                g_clear_handle_id (&c->client_id, g_source_remove);
                if (cond)
                        c->client_id = g_unix_fd_add (c->client_fd, cond, on_client, c);
                c->client_cond = cond;
        }
}

static void
channel_step (Channel *c)
{
        if (!c->client_deaf && !c->client_dead)
                client_flush (c);
        if (!c->client_dead)
                stream_flush (c);
        if (channel_finished (c))
                channel_disconnect (c);
        else
                channel_watch (c);
}

static void
on_stream (virStreamPtr st, int events, void *opaque)
{
        Channel *c = opaque;

        if (events & (VIR_STREAM_EVENT_READABLE | STREAM_ALWAYS))
                stream_fill (c);
        if ((events & VIR_STREAM_EVENT_ERROR) && !c->stream_done)
                stream_failed (c, "the stream");
        else if ((events & VIR_STREAM_EVENT_HANGUP) && !c->stream_done)
                c->stream_done = TRUE;
        channel_step (c);
}

/* The source may be replaced or removed in channel_step(); GLib allows that in its own dispatch. */
static gboolean
on_client (int fd, GIOCondition cond, gpointer user_data)
{
        Channel *c = user_data;

        if (c->client_cond & G_IO_IN)
                client_fill (c);
        channel_step (c);
        return G_SOURCE_CONTINUE;
}

static gboolean
channel_open_stream (Channel *c)
{
        virStreamPtr st = virStreamNew (c->b->conn, VIR_STREAM_NONBLOCK);
        int events = VIR_STREAM_EVENT_READABLE | STREAM_ALWAYS;

        if (!st) {
                say ("%s: %s", c->name, libvirt_message ());
                return FALSE;
        }
        /* FORCE: a stream a bridge before us left open would otherwise keep the port. */
        if (virDomainOpenChannel (c->b->dom, c->name, st, VIR_DOMAIN_CHANNEL_FORCE) < 0 ||
            virStreamEventAddCallback (st, events, on_stream, c, NULL) < 0) {
                say ("%s: cannot open the port: %s", c->name, libvirt_message ());
                virStreamAbort (st);
                virStreamFree (st);
                return FALSE;
        }
        c->st = st;
        c->st_events = events;
        return TRUE;
}

static gboolean
on_accept_retry (gpointer user_data)
{
        Channel *c = user_data;

        c->listen_id = 0;
        channel_listen (c);
        return G_SOURCE_REMOVE;
}

static gboolean
on_accept (int fd, GIOCondition cond, gpointer user_data)
{
        Channel *c = user_data;
        int client = accept4 (fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (client < 0 && (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED))
                return G_SOURCE_CONTINUE;
        if (client < 0) {
                /* e.g. out of fds: the socket stays readable, so wait rather than spin */
                say ("%s: accept: %s", c->path, g_strerror (errno));
                c->listen_id = g_timeout_add_seconds (1, on_accept_retry, c);
                return G_SOURCE_REMOVE;
        }
        if (!channel_open_stream (c)) {
                close (client);
                return G_SOURCE_CONTINUE;
        }
        /* One client at a time, as QEMU's chardev: the next waits in the backlog. */
        c->listen_id = 0;
        c->client_fd = client;
        c->client_eof = c->client_deaf = c->client_dead = FALSE;
        c->stream_done = c->stream_failed = FALSE;
        channel_watch (c);
        return G_SOURCE_REMOVE;
}

static void
channel_listen (Channel *c)
{
        if (!c->listen_id)
                c->listen_id = g_unix_fd_add (c->listen_fd, G_IO_IN, on_accept, c);
}

/* Ports and their sockets ----------------------------------------------------------------------- */

static gboolean
channel_name_is_valid (const char *name, size_t len)
{
        if (len == 0 || len > CHANNEL_NAME_MAX)
                return FALSE;
        for (size_t i = 0; i < len; i++)
                if (!g_ascii_isalnum (name[i]) && name[i] != '_' && name[i] != '.' &&
                    name[i] != '-')
                        return FALSE;
        return TRUE;
}

/* CHANNEL=SOCKET_PATH: checked here, bound later by channel_bind(). */
static Channel *
channel_new (Bridge *b, const char *spec, GError **error)
{
        const char *eq = strchr (spec, '=');
        Channel *c;

        if (!eq || !channel_name_is_valid (spec, (size_t) (eq - spec))) {
                g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                             "“%s”: expected CHANNEL=SOCKET_PATH, CHANNEL being 1 to %d of "
                             "A-Z a-z 0-9 _ . -",
                             spec, CHANNEL_NAME_MAX);
                return NULL;
        }
        if (eq[1] != '/' || strlen (eq + 1) >= SUN_PATH_SIZE) {
                g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                             "“%s”: the socket path must be absolute and shorter than %zu bytes",
                             spec, SUN_PATH_SIZE);
                return NULL;
        }
        c = g_new0 (Channel, 1);
        c->b = b;
        c->name = g_strndup (spec, (gsize) (eq - spec));
        c->path = g_strdup (eq + 1);
        c->listen_fd = c->client_fd = -1;
        c->to_client.data = g_malloc (BUF_SIZE);
        c->to_stream.data = g_malloc (BUF_SIZE);
        return c;
}

static void
channel_free (Channel *c)
{
        struct stat sb;

        if (c->client_fd >= 0) {
                c->client_dead = TRUE; /* abort, not finish: we are leaving */
                channel_disconnect (c);
        }
        g_clear_handle_id (&c->listen_id, g_source_remove);
        if (c->listen_fd >= 0) {
                close (c->listen_fd);
                if (lstat (c->path, &sb) == 0 && sb.st_dev == c->dev && sb.st_ino == c->ino)
                        unlink (c->path);
        }
        g_free (c->to_client.data);
        g_free (c->to_stream.data);
        g_free (c->name);
        g_free (c->path);
        g_free (c);
}

/* A listening socket, 0600, non-blocking; a negative errno, -EEXIST if a non-socket is there. */
static int
listen_unix (const char *path, struct stat *ret_st)
{
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        g_autofd int fd = -1;
        struct stat sb;
        mode_t old;
        int r;

        if (lstat (path, &sb) == 0 && !S_ISSOCK (sb.st_mode))
                return -EEXIST;
        /* A socket left by a bridge that died: nobody listens there, as we hold the lock. */
        if (unlink (path) < 0 && errno != ENOENT)
                return -errno;
        g_strlcpy (sun.sun_path, path, sizeof sun.sun_path);
        fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        old = umask (0177); /* 0600: only this user talks to the guest */
        r = bind (fd, (struct sockaddr *) &sun, sizeof sun);
        umask (old);
        if (r < 0 || listen (fd, 8) < 0 || stat (path, ret_st) < 0)
                return -errno;
        return g_steal_fd (&fd);
}

static gboolean
channel_bind (Channel *c, GError **error)
{
        struct stat sb;
        int fd = listen_unix (c->path, &sb);

        if (fd == -EEXIST) {
                g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
                             "%s: something other than a socket is in the way", c->path);
                return FALSE;
        }
        if (fd < 0) {
                g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (-fd),
                             "cannot listen on %s: %s", c->path, g_strerror (-fd));
                return FALSE;
        }
        c->listen_fd = fd;
        c->dev = sb.st_dev;
        c->ino = sb.st_ino;
        return TRUE;
}

/* The serial console ---------------------------------------------------------------------------- */

static void
console_stop (Bridge *b, gboolean graceful)
{
        if (b->console_st)
                stream_close (b->console_st, graceful);
        b->console_st = NULL;
        if (b->console_fd >= 0)
                close (b->console_fd);
        b->console_fd = -1;
}

/* FALSE when the copy ends here: the log failed or is full. */
static gboolean
console_append (Bridge *b, const char *data, size_t len)
{
        static const char full[] = "\n[corral-chanbridge: this console log reached 16 MiB; "
                                   "the rest of the console is not kept]\n";
        size_t n = MIN (len, (size_t) (CONSOLE_MAX - b->console_size));
        int r = corral_write_all (b->console_fd, data, n);

        if (r < 0) {
                say ("console log: %s; no longer copying the console", g_strerror (-r));
                return FALSE;
        }
        b->console_size += (off_t) n;
        if (b->console_size < CONSOLE_MAX)
                return TRUE;
        (void) corral_write_all (b->console_fd, full, sizeof full - 1);
        say ("the console log reached 16 MiB; no longer copying the console");
        return FALSE;
}

static void
on_console (virStreamPtr st, int events, void *opaque)
{
        static char buf[STREAM_CHUNK];
        Bridge *b = opaque;

        /* A few chunks per turn, so the ports get theirs; a remote stream fires again. */
        for (int i = 0; i < 4; i++) {
                int n = virStreamRecv (st, buf, sizeof buf);

                if (n == -2) {
                        if (events & STREAM_ALWAYS)
                                console_stop (b, FALSE);
                        return;
                }
                if (n < 0)
                        say ("serial console: %s; no longer copying it", libvirt_message ());
                if (n <= 0 || !console_append (b, buf, (size_t) n)) {
                        console_stop (b, n == 0);
                        return;
                }
        }
}

/* Best effort: without a pty serial (or a usable file) the VM runs on, unlogged. */
static void
console_start (Bridge *b, const char *path)
{
        g_autofd int fd = open (path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        int events = VIR_STREAM_EVENT_READABLE | STREAM_ALWAYS;
        struct stat sb;
        virStreamPtr st;

        if (fd < 0 || fstat (fd, &sb) < 0) {
                say ("not copying the console: %s: %s", path, g_strerror (errno));
                return;
        }
        if (!S_ISREG (sb.st_mode) || sb.st_size >= CONSOLE_MAX) {
                say ("not copying the console: %s is not a file under 16 MiB", path);
                return;
        }
        st = virStreamNew (b->conn, VIR_STREAM_NONBLOCK);
        if (!st || virDomainOpenConsole (b->dom, NULL, st, VIR_DOMAIN_CONSOLE_FORCE) < 0 ||
            virStreamEventAddCallback (st, events, on_console, b, NULL) < 0) {
                say ("not copying the console: %s", libvirt_message ());
                if (st) {
                        virStreamAbort (st);
                        virStreamFree (st);
                }
                return;
        }
        b->console_st = st;
        b->console_fd = g_steal_fd (&fd);
        b->console_size = sb.st_size;
}

/* libvirt --------------------------------------------------------------------------------------- */

static int
on_lifecycle (virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque)
{
        Bridge *b = opaque;

        if (event == VIR_DOMAIN_EVENT_STOPPED)
                bridge_quit (b, "the domain stopped");
        else if (event == VIR_DOMAIN_EVENT_SHUTDOWN && detail == VIR_DOMAIN_EVENT_SHUTDOWN_FINISHED)
                bridge_quit (b, "the domain shut down");
        else if (event == VIR_DOMAIN_EVENT_UNDEFINED)
                bridge_quit (b, "the domain was undefined");
        else if (event == VIR_DOMAIN_EVENT_CRASHED)
                bridge_quit (b, "the domain crashed");
        return 0;
}

static void
on_connection_closed (virConnectPtr conn, int reason, void *opaque)
{
        if (reason == VIR_CONNECT_CLOSE_REASON_KEEPALIVE)
                bridge_quit (opaque, "the libvirt host stopped answering");
        else
                bridge_quit (opaque, "the connection to libvirt closed");
}

static gboolean
bridge_connect (Bridge *b, const char *uri)
{
        /* In this order: libvirt's default event loop is GLib's default main context, and the
         * connection must be opened after it is registered to deliver events and keepalives. */
        virSetErrorFunc (NULL, ignore_libvirt_error);
        if (virInitialize () < 0 || virEventRegisterDefaultImpl () < 0) {
                say ("cannot start libvirt: %s", libvirt_message ());
                return FALSE;
        }
        b->conn = virConnectOpen (uri);
        if (!b->conn) {
                say ("cannot connect to %s: %s", uri, libvirt_message ());
                return FALSE;
        }
        /* Without keepalives a host that vanished is noticed only when TCP gives up. */
        if (virConnectSetKeepAlive (b->conn, 5, 3) < 0 &&
            virGetLastErrorCode () != VIR_ERR_NO_SUPPORT)
                say ("no keepalive on %s: %s", uri, libvirt_message ());
        if (virConnectRegisterCloseCallback (b->conn, on_connection_closed, b, NULL) == 0)
                b->close_cb = TRUE;
        return TRUE;
}

/* FALSE with *ret_status: 0 when there is nothing to bridge, 1 on a failure. */
static gboolean
bridge_find_domain (Bridge *b, const char *name, int *ret_status)
{
        int active = -1;

        b->dom = virDomainLookupByName (b->conn, name);
        if (!b->dom && virGetLastErrorCode () == VIR_ERR_NO_DOMAIN) {
                say ("there is no domain “%s”; nothing to bridge", name);
                *ret_status = 0;
                return FALSE;
        }
        /* Watching before the check: a domain that stops in between is not missed. */
        if (b->dom)
                b->lifecycle_id = virConnectDomainEventRegisterAny (
                        b->conn, b->dom, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                        VIR_DOMAIN_EVENT_CALLBACK (on_lifecycle), b, NULL);
        if (b->lifecycle_id >= 0)
                active = virDomainIsActive (b->dom);
        if (active < 0) {
                say ("domain “%s”: %s", name, libvirt_message ());
                *ret_status = 1;
                return FALSE;
        }
        if (!active) {
                say ("domain “%s” is not running; nothing to bridge", name);
                *ret_status = 0;
                return FALSE;
        }
        return TRUE;
}

static void
bridge_clear (Bridge *b)
{
        b->quitting = TRUE; /* no more listening */
        g_clear_pointer (&b->channels, g_ptr_array_unref);
        console_stop (b, FALSE);
        if (b->lifecycle_id >= 0)
                virConnectDomainEventDeregisterAny (b->conn, b->lifecycle_id);
        if (b->close_cb)
                virConnectUnregisterCloseCallback (b->conn, on_connection_closed);
        g_clear_pointer (&b->dom, virDomainFree);
        g_clear_pointer (&b->conn, virConnectClose);
        g_clear_pointer (&b->loop, g_main_loop_unref);
}

/* Main ------------------------------------------------------------------------------------------ */

typedef struct {
        char *uri, *domain, *lock, *console;
        char **specs;
} Options;

static void
options_clear (Options *o)
{
        g_free (o->uri);
        g_free (o->domain);
        g_free (o->lock);
        g_free (o->console);
        g_strfreev (o->specs);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Options, options_clear)

static gboolean
parse_args (Options *o, int *argc, char ***argv, GError **error)
{
        GOptionEntry entries[] = {
                { "uri", 0, 0, G_OPTION_ARG_STRING, &o->uri, "The libvirt connection", "URI" },
                { "domain", 0, 0, G_OPTION_ARG_STRING, &o->domain, "The domain's name", "DOMAIN" },
                { "lock", 0, 0, G_OPTION_ARG_FILENAME, &o->lock,
                  "Hold this lock while running; exit at once if another bridge holds it", "PATH" },
                { "console", 0, 0, G_OPTION_ARG_FILENAME, &o->console,
                  "Append the serial console to this file", "PATH" },
                { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o->specs, NULL, NULL },
                { NULL },
        };
        g_autoptr (GOptionContext) ctx = g_option_context_new (
                "CHANNEL=SOCKET_PATH… - bridge a VM's ports to local sockets");

        g_option_context_add_main_entries (ctx, entries, NULL);
        if (!g_option_context_parse (ctx, argc, argv, error))
                return FALSE;
        if (!o->uri || !o->domain || !o->lock) {
                g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                             "--uri, --domain and --lock are required");
                return FALSE;
        }
        if (!o->specs && !o->console) {
                g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                             "nothing to bridge: give CHANNEL=SOCKET_PATH or --console");
                return FALSE;
        }
        return TRUE;
}

static gboolean
bridge_add_channels (Bridge *b, char **specs, GError **error)
{
        for (guint i = 0; specs && specs[i]; i++) {
                Channel *c = channel_new (b, specs[i], error);

                if (!c)
                        return FALSE;
                for (guint j = 0; j < b->channels->len; j++) {
                        Channel *other = g_ptr_array_index (b->channels, j);

                        if (g_str_equal (other->name, c->name) ||
                            g_str_equal (other->path, c->path)) {
                                g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                                             "“%s”: that channel or socket is given twice",
                                             specs[i]);
                                channel_free (c);
                                return FALSE;
                        }
                }
                g_ptr_array_add (b->channels, c);
        }
        return TRUE;
}

/* 1 when this process holds the lock (for life), 0 when another does, or a negative errno.
 * A starter that probes for a running bridge holds the lock for a moment itself: a few tries
 * tell that apart from a bridge that holds it for good. */
static int
take_lock (const char *path)
{
        int fd = open (path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        int r = 0;

        if (fd < 0)
                return -errno;
        for (int i = 0; i < 10; i++) {
                if (flock (fd, LOCK_EX | LOCK_NB) == 0)
                        return 1; /* fd stays open, and locked, until exit */
                if (errno != EWOULDBLOCK) {
                        r = -errno;
                        break;
                }
                g_usleep (20 * 1000);
        }
        close (fd);
        return r;
}

static gboolean
on_signal (gpointer user_data)
{
        bridge_quit (user_data, "asked to stop");
        return G_SOURCE_CONTINUE;
}

static int
bridge_run (Bridge *b, const Options *o)
{
        g_autoptr (GError) error = NULL;
        int status = 1;

        if (!bridge_connect (b, o->uri) || !bridge_find_domain (b, o->domain, &status))
                return status;
        for (guint i = 0; i < b->channels->len; i++) {
                if (!channel_bind (g_ptr_array_index (b->channels, i), &error)) {
                        say ("%s", error->message);
                        return 1;
                }
        }
        if (o->console)
                console_start (b, o->console);
        for (guint i = 0; i < b->channels->len; i++)
                channel_listen (g_ptr_array_index (b->channels, i));
        g_unix_signal_add (SIGTERM, on_signal, b);
        g_unix_signal_add (SIGINT, on_signal, b);
        g_main_loop_run (b->loop);
        return 0;
}

int
main (int argc, char **argv)
{
        g_auto (Options) o = { 0 };
        g_autoptr (GError) error = NULL;
        Bridge b = { .lifecycle_id = -1, .console_fd = -1 };
        int r;

        setlocale (LC_ALL, "");
        b.channels = g_ptr_array_new_with_free_func ((GDestroyNotify) channel_free);
        if (!parse_args (&o, &argc, &argv, &error) || !bridge_add_channels (&b, o.specs, &error)) {
                say ("%s", error->message);
                bridge_clear (&b);
                return 2;
        }
        /* One bridge per VM: one started by a racing caller leaves quietly. */
        r = take_lock (o.lock);
        if (r <= 0) {
                if (r < 0)
                        say ("cannot lock %s: %s", o.lock, g_strerror (-r));
                bridge_clear (&b);
                return r < 0 ? 1 : 0;
        }
        /* Clients that vanish must not kill us; libvirt's own sockets write without MSG_NOSIGNAL. */
        signal (SIGPIPE, SIG_IGN);
        b.loop = g_main_loop_new (NULL, FALSE);
        r = bridge_run (&b, &o);
        bridge_clear (&b);
        return r;
}
