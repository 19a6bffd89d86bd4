/* corral-vnc.c — one VNC connection to a VM's screen (see corral-vnc.h).
 *
 * Three parts: the object (main context), the state it shares with the connection's thread
 * (Shared: the screen's copy, the pending redraw, under one lock), and the connection (Conn:
 * libvncclient's rfbClient, owned by its thread, with the input queue and a wake-up pipe).
 * Both are reference counted, so that the object can go while a thread still ends.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-vnc.h"

#include "corral-thread.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <glib/gi18n.h>
#include <poll.h>
#include <pthread.h>
#include <rfb/rfbclient.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* What the object and its connections' threads share. */
typedef struct {
        gatomicrefcount ref;
        GMutex lock;
        GMainContext *context;
        GWeakRef owner;
        /* under lock */
        guint8 *screen; /* RGBA */
        guint width, height;
        guint64 updates;
        gint64 last_update;
        gboolean redraw_scheduled, resized;
        gboolean painted; /* pixels came since the last finished update */
        guint dx0, dy0, dx1, dy1; /* the redrawn area since the last emission, x1/y1 past it */
} Shared;

typedef enum { INPUT_POINTER, INPUT_KEY } InputKind;

typedef struct {
        InputKind kind;
        guint x, y, buttons;
        guint32 keysym;
        guint scancode; /* 0: none, send the keysym alone */
        gboolean down;
} Input;

/* One connection, from connect to close. */
typedef struct {
        gatomicrefcount ref;
        Shared *shared;
        GMutex lock;
        /* under lock */
        int sock; /* -1 once closed by the thread */
        gboolean stop;
        GQueue input;
        /* the thread's alone */
        rfbClient *client;
        int wake[2];
        GTask *connect_task; /* until the handshake ends */
        char *error; /* why libvncclient gave up, or why a callback refused */
        gboolean pictured; /* a picture of this connection's was counted */
        gint64 provisional_until; /* an all-black first picture waits until then (or 0) */
} Conn;

struct _CorralVnc {
        GObject parent_instance;
        Shared *shared;
        Conn *conn; /* the current connection, or NULL */
        gboolean connected;
        char *path; /* nullable: the socket last connected to by path */
};

G_DEFINE_FINAL_TYPE (CorralVnc, corral_vnc, G_TYPE_OBJECT)

enum { PROP_0, PROP_WIDTH, PROP_HEIGHT, PROP_CONNECTED, N_PROPS };
static GParamSpec *props[N_PROPS];
enum { SIGNAL_SCREEN_CHANGED, SIGNAL_CLOSED, N_SIGNALS };
static guint signals[N_SIGNALS];

/* libvncclient's tag for our Conn on its rfbClient. */
static int conn_tag;
/* libvncclient says why it gave up through its log functions: the last error of this thread. */
static GPrivate last_error = G_PRIVATE_INIT (g_free);

static Shared *
shared_ref (Shared *s)
{
        g_atomic_ref_count_inc (&s->ref);
        return s;
}

static void
shared_unref (Shared *s)
{
        if (!g_atomic_ref_count_dec (&s->ref))
                return;
        g_mutex_clear (&s->lock);
        g_weak_ref_clear (&s->owner);
        g_main_context_unref (s->context);
        g_free (s->screen);
        g_free (s);
}

static Conn *
conn_ref (Conn *c)
{
        g_atomic_ref_count_inc (&c->ref);
        return c;
}

static void
conn_unref (Conn *c)
{
        if (!g_atomic_ref_count_dec (&c->ref))
                return;
        g_queue_clear_full (&c->input, g_free);
        g_mutex_clear (&c->lock);
        if (c->wake[0] >= 0)
                close (c->wake[0]);
        if (c->wake[1] >= 0)
                close (c->wake[1]);
        g_free (c->error);
        shared_unref (c->shared);
        g_free (c);
}

static void log_debug (const char *format, ...) G_GNUC_PRINTF (1, 2);
static void log_error (const char *format, ...) G_GNUC_PRINTF (1, 2);

static void
log_debug (const char *format, ...)
{
        va_list ap;
        char line[512];

        va_start (ap, format);
        vsnprintf (line, sizeof line, format, ap);
        va_end (ap);
        g_debug ("libvncclient: %s", g_strchomp (line));
}

static void
log_error (const char *format, ...)
{
        va_list ap;
        char line[512];

        va_start (ap, format);
        vsnprintf (line, sizeof line, format, ap);
        va_end (ap);
        g_strchomp (line);
        g_debug ("libvncclient error: %s", line);
        g_private_replace (&last_error, g_strdup (line));
}

/* Main context: the redrawn area, one emission per turn ---------------------------------- */

static gboolean
emit_redraw (gpointer data)
{
        Shared *s = data;
        g_autoptr (CorralVnc) self = g_weak_ref_get (&s->owner);
        guint x, y, w, h;
        gboolean resized;

        g_mutex_lock (&s->lock);
        s->redraw_scheduled = FALSE;
        resized = s->resized;
        s->resized = FALSE;
        x = s->dx0;
        y = s->dy0;
        w = s->dx1 > s->dx0 ? s->dx1 - s->dx0 : 0;
        h = s->dy1 > s->dy0 ? s->dy1 - s->dy0 : 0;
        s->dx0 = s->dy0 = G_MAXUINT;
        s->dx1 = s->dy1 = 0;
        g_mutex_unlock (&s->lock);
        if (!self)
                return G_SOURCE_REMOVE;
        if (resized) {
                g_object_notify_by_pspec (G_OBJECT (self), props[PROP_WIDTH]);
                g_object_notify_by_pspec (G_OBJECT (self), props[PROP_HEIGHT]);
        }
        if (w && h)
                g_signal_emit (self, signals[SIGNAL_SCREEN_CHANGED], 0, x, y, w, h);
        return G_SOURCE_REMOVE;
}

/* Under s->lock. */
static void
schedule_redraw (Shared *s)
{
        if (s->redraw_scheduled)
                return;
        s->redraw_scheduled = TRUE;
        corral_main_context_post (s->context, emit_redraw, shared_ref (s),
                                  (GDestroyNotify) shared_unref);
}

/* The connection's thread: libvncclient's callbacks ------------------------------------- */

static Conn *
conn_of (rfbClient *client)
{
        return rfbClientGetClientData (client, &conn_tag);
}

static rfbBool
on_malloc_framebuffer (rfbClient *client)
{
        Conn *c = conn_of (client);
        Shared *s = c->shared;
        guint64 pixels = (guint64) MAX (client->width, 0) * (guint64) MAX (client->height, 0);

        free (client->frameBuffer);
        client->frameBuffer = NULL;
        if (client->width < 1 || client->height < 1 || client->width > CORRAL_VNC_MAX_SIDE ||
            client->height > CORRAL_VNC_MAX_SIDE || pixels > CORRAL_VNC_MAX_PIXELS) {
                g_free (c->error);
                c->error = g_strdup_printf (_ ("the VM’s screen says it is %d × %d pixels; "
                                               "Corral shows screens of up to %u × %u"),
                                            client->width, client->height, CORRAL_VNC_MAX_SIDE,
                                            CORRAL_VNC_MAX_SIDE);
                return FALSE;
        }
        /* 32 bits a pixel (rfbGetClient (8, 3, 4)); zeroed, as the server may not paint it all. */
        client->frameBuffer = calloc (pixels, 4);
        if (!client->frameBuffer)
                return FALSE;
        g_mutex_lock (&s->lock);
        g_free (s->screen);
        s->screen = g_malloc0 (pixels * 4);
        for (guint64 i = 0; i < pixels; i++)
                s->screen[i * 4 + 3] = 0xff;
        s->width = client->width;
        s->height = client->height;
        s->resized = TRUE;
        s->dx0 = s->dy0 = 0;
        s->dx1 = s->width;
        s->dy1 = s->height;
        schedule_redraw (s);
        g_mutex_unlock (&s->lock);
        return TRUE;
}

static void
on_update (rfbClient *client, int x, int y, int w, int h)
{
        Conn *c = conn_of (client);
        Shared *s = c->shared;
        guint x0, y0, x1, y1;

        g_mutex_lock (&s->lock);
        /* libvncclient checked the rectangle against the screen; checked again, as the copy
         * below trusts it. */
        x0 = CLAMP (x, 0, (int) s->width);
        y0 = CLAMP (y, 0, (int) s->height);
        x1 = x0 + (guint) CLAMP (w, 0, (int) (s->width - x0));
        y1 = y0 + (guint) CLAMP (h, 0, (int) (s->height - y0));
        if (s->width != (guint) client->width || s->height != (guint) client->height ||
            !client->frameBuffer) {
                g_mutex_unlock (&s->lock);
                return;
        }
        for (guint row = y0; row < y1; row++) {
                const guint8 *from = client->frameBuffer + ((gsize) row * s->width + x0) * 4;
                guint8 *to = s->screen + ((gsize) row * s->width + x0) * 4;

                for (guint i = 0; i < x1 - x0; i++) {
                        to[i * 4] = from[i * 4];
                        to[i * 4 + 1] = from[i * 4 + 1];
                        to[i * 4 + 2] = from[i * 4 + 2];
                        to[i * 4 + 3] = 0xff;
                }
        }
        if (x1 > x0 && y1 > y0) {
                s->painted = TRUE;
                s->dx0 = MIN (s->dx0, x0);
                s->dy0 = MIN (s->dy0, y0);
                s->dx1 = MAX (s->dx1, x1);
                s->dy1 = MAX (s->dy1, y1);
                s->last_update = g_get_monotonic_time ();
                schedule_redraw (s);
        }
        g_mutex_unlock (&s->lock);
}

/* Whether the screen is all black. Under s->lock. */
static gboolean
screen_black (Shared *s)
{
        gsize n = (gsize) s->width * s->height;

        for (gsize i = 0; i < n; i++)
                if (s->screen[i * 4] | s->screen[i * 4 + 1] | s->screen[i * 4 + 2])
                        return FALSE;
        return TRUE;
}

/* Counts a picture: what waits for one (a screenshot settling) sees it. Under s->lock. */
static void
count_picture (Conn *c, Shared *s)
{
        c->pictured = TRUE;
        c->provisional_until = 0;
        s->updates++;
        s->last_update = g_get_monotonic_time ();
        /* Wakes the main context, where a screenshot may be waiting for this count. */
        schedule_redraw (s);
}

static void
on_update_finished (rfbClient *client)
{
        Conn *c = conn_of (client);
        Shared *s = c->shared;

        g_mutex_lock (&s->lock);
        /* An update of no pixels (QEMU's size announcement, before the picture itself) is not
         * a picture. Nor, at first, is an all-black one: when a client connects to a screen no
         * one was watching, QEMU answers from a copy it has just made, still black, and sends
         * the real picture at its next refresh, up to 3 s later (VNC_REFRESH_INTERVAL_MAX). A
         * screen that really is black counts once that time has passed (conn_thread). */
        if (s->painted) {
                s->painted = FALSE;
                if (c->pictured || !screen_black (s))
                        count_picture (c, s);
                else if (!c->provisional_until)
                        c->provisional_until =
                                g_get_monotonic_time () + CORRAL_VNC_STALE_FIRST_MS * 1000;
        }
        g_mutex_unlock (&s->lock);
}

/* The guest's clipboard is not taken onto this computer (SECURITY.md V10). */
static void
on_cut_text (rfbClient *client, const char *text, int length)
{
        g_debug ("the VM offered %d bytes of clipboard text; not taken", length);
}

static char *
on_password (rfbClient *client)
{
        /* No password: the socket is the VM folder's, only Corral reaches it. */
        return NULL;
}

/* The connection's thread ------------------------------------------------------------- */

static void
conn_send_input (Conn *c)
{
        while (TRUE) {
                g_autofree Input *in = NULL;

                g_mutex_lock (&c->lock);
                in = g_queue_pop_head (&c->input);
                g_mutex_unlock (&c->lock);
                if (!in)
                        return;
                if (in->kind == INPUT_POINTER) {
                        guint x = MIN (in->x, (guint) MAX (c->client->width - 1, 0));
                        guint y = MIN (in->y, (guint) MAX (c->client->height - 1, 0));

                        SendPointerEvent (c->client, (int) x, (int) y, (int) in->buttons);
                } else if (!in->scancode ||
                           !SendExtendedKeyEvent (c->client, in->keysym, in->scancode, in->down)) {
                        /* Without QEMU's extended key events (FALSE: not offered), the
                         * keysym alone: QEMU maps it with its own keymap. */
                        SendKeyEvent (c->client, in->keysym, in->down);
                }
        }
}

static char *
conn_reason (Conn *c, const char *fallback)
{
        const char *libvnc = g_private_get (&last_error);

        if (c->error)
                return g_strdup (c->error);
        if (libvnc)
                return g_strdup_printf (_ ("%s (%s)"), fallback, libvnc);
        return g_strdup (fallback);
}

typedef struct {
        Conn *conn;
        char *reason; /* NULL: asked to close */
} Closed;

static gboolean
emit_closed (gpointer data)
{
        Closed *closed = data;
        Shared *s = closed->conn->shared;
        g_autoptr (CorralVnc) self = g_weak_ref_get (&s->owner);

        if (self && self->conn == closed->conn) {
                g_clear_pointer (&self->conn, conn_unref);
                self->connected = FALSE;
                g_object_notify_by_pspec (G_OBJECT (self), props[PROP_CONNECTED]);
                g_signal_emit (self, signals[SIGNAL_CLOSED], 0, closed->reason);
        }
        conn_unref (closed->conn);
        g_free (closed->reason);
        g_free (closed);
        return G_SOURCE_REMOVE;
}

static gboolean
conn_stopping (Conn *c)
{
        gboolean stop;

        g_mutex_lock (&c->lock);
        stop = c->stop;
        g_mutex_unlock (&c->lock);
        return stop;
}

static gpointer
conn_thread (gpointer data)
{
        Conn *c = data;
        int argc = 1;
        char *argv[] = { (char *) "corral", NULL };
        g_autofree char *reason = NULL;
        Closed *closed;
        sigset_t pipe;

        /* libvncclient writes with write(): a server gone (or our own shutdown() at close)
         * must be EPIPE on this thread, not SIGPIPE for the whole program. */
        sigemptyset (&pipe);
        sigaddset (&pipe, SIGPIPE);
        pthread_sigmask (SIG_BLOCK, &pipe, NULL);
        c->client = rfbGetClient (8, 3, 4);
        rfbClientSetClientData (c->client, &conn_tag, c);
        c->client->MallocFrameBuffer = on_malloc_framebuffer;
        c->client->GotFrameBufferUpdate = on_update;
        c->client->FinishedFrameBufferUpdate = on_update_finished;
        c->client->GotXCutText = on_cut_text;
        c->client->GetPassword = on_password;
        c->client->canHandleNewFBSize = TRUE;
        /* Lossless, and few decoders: raw, copies and hextile are what QEMU sends best over a
         * local socket; no Tight (JPEG would blur the model's screenshots). */
        c->client->appData.encodingsString = "copyrect hextile raw";
        c->client->appData.useRemoteCursor = FALSE;
        c->client->readTimeout = CORRAL_VNC_READ_TIMEOUT_S;
        c->client->connectTimeout = CORRAL_VNC_READ_TIMEOUT_S;
        /* Our socket: libvncclient connects nothing itself, and closes it when it is done. */
        c->client->sock = c->sock;
        c->client->listenSpecified = TRUE;
        if (!rfbInitClient (c->client, &argc, argv)) {
                /* rfbInitClient freed the client and closed the socket. */
                c->client = NULL;
                g_mutex_lock (&c->lock);
                c->sock = -1;
                g_mutex_unlock (&c->lock);
                reason = conn_reason (c, _ ("The VM’s screen did not answer as a VNC server"));
                g_task_return_new_error (c->connect_task, G_IO_ERROR, G_IO_ERROR_FAILED, "%s",
                                         reason);
                g_clear_object (&c->connect_task);
                conn_unref (c);
                return NULL;
        }
        g_task_return_boolean (c->connect_task, TRUE);
        g_clear_object (&c->connect_task);

        while (!conn_stopping (c)) {
                struct pollfd fds[2] = { { .fd = c->client->sock, .events = POLLIN },
                                         { .fd = c->wake[0], .events = POLLIN } };
                int timeout = -1;

                conn_send_input (c);
                /* A black first picture nothing replaced in time is the picture. */
                g_mutex_lock (&c->shared->lock);
                if (c->provisional_until) {
                        gint64 left = c->provisional_until - g_get_monotonic_time ();

                        if (left <= 0)
                                count_picture (c, c->shared);
                        else
                                timeout = (int) (left / 1000) + 1;
                }
                g_mutex_unlock (&c->shared->lock);
                /* What libvncclient already read is handled before waiting for more. */
                if (c->client->buffered == 0 && poll (fds, 2, timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        reason = g_strdup_printf ("poll: %s", g_strerror (errno));
                        break;
                }
                if (fds[1].revents) {
                        char drain[64];

                        while (read (c->wake[0], drain, sizeof drain) > 0)
                                ;
                        continue;
                }
                if (c->client->buffered > 0 || fds[0].revents) {
                        if (!HandleRFBServerMessage (c->client)) {
                                if (!conn_stopping (c))
                                        reason = conn_reason (
                                                c, _ ("The connection to the VM’s screen ended"));
                                break;
                        }
                }
        }
        g_mutex_lock (&c->lock);
        c->sock = -1;
        g_mutex_unlock (&c->lock);
        free (c->client->frameBuffer);
        c->client->frameBuffer = NULL;
        rfbClientCleanup (c->client);
        c->client = NULL;
        closed = g_new0 (Closed, 1);
        closed->conn = c; /* the thread's reference */
        closed->reason = g_steal_pointer (&reason);
        corral_main_context_post (c->shared->context, emit_closed, closed, NULL);
        return NULL;
}

/* The object ------------------------------------------------------------------------- */

static void
conn_stop (Conn *c)
{
        char byte = 1;

        g_mutex_lock (&c->lock);
        c->stop = TRUE;
        /* A thread waiting for the rest of a message wakes up now, not after the timeout. */
        if (c->sock >= 0)
                shutdown (c->sock, SHUT_RDWR);
        g_mutex_unlock (&c->lock);
        if (write (c->wake[1], &byte, 1) < 0 && errno != EAGAIN)
                g_debug ("wake: %s", g_strerror (errno));
}

static void
corral_vnc_init (CorralVnc *self)
{
        self->shared = g_new0 (Shared, 1);
        g_atomic_ref_count_init (&self->shared->ref);
        g_mutex_init (&self->shared->lock);
        self->shared->context = g_main_context_ref_thread_default ();
        g_weak_ref_init (&self->shared->owner, self);
        self->shared->dx0 = self->shared->dy0 = G_MAXUINT;
}

static void
corral_vnc_dispose (GObject *object)
{
        CorralVnc *self = CORRAL_VNC (object);

        if (self->conn) {
                conn_stop (self->conn);
                g_clear_pointer (&self->conn, conn_unref);
        }
        G_OBJECT_CLASS (corral_vnc_parent_class)->dispose (object);
}

static void
corral_vnc_finalize (GObject *object)
{
        CorralVnc *self = CORRAL_VNC (object);

        g_weak_ref_set (&self->shared->owner, NULL);
        shared_unref (self->shared);
        g_free (self->path);
        G_OBJECT_CLASS (corral_vnc_parent_class)->finalize (object);
}

static void
corral_vnc_get_property (GObject *object, guint id, GValue *value, GParamSpec *pspec)
{
        CorralVnc *self = CORRAL_VNC (object);

        switch (id) {
        case PROP_WIDTH:
                g_value_set_uint (value, corral_vnc_get_width (self));
                break;
        case PROP_HEIGHT:
                g_value_set_uint (value, corral_vnc_get_height (self));
                break;
        case PROP_CONNECTED:
                g_value_set_boolean (value, self->connected);
                break;
        default:
                G_OBJECT_WARN_INVALID_PROPERTY_ID (object, id, pspec);
        }
}

static void
corral_vnc_class_init (CorralVncClass *klass)
{
        GObjectClass *object_class = G_OBJECT_CLASS (klass);

        object_class->dispose = corral_vnc_dispose;
        object_class->finalize = corral_vnc_finalize;
        object_class->get_property = corral_vnc_get_property;
        props[PROP_WIDTH] = g_param_spec_uint ("width", NULL, NULL, 0, CORRAL_VNC_MAX_SIDE, 0,
                                               G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
        props[PROP_HEIGHT] = g_param_spec_uint ("height", NULL, NULL, 0, CORRAL_VNC_MAX_SIDE, 0,
                                                G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
        props[PROP_CONNECTED] = g_param_spec_boolean ("connected", NULL, NULL, FALSE,
                                                      G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
        g_object_class_install_properties (object_class, N_PROPS, props);
        signals[SIGNAL_SCREEN_CHANGED] = g_signal_new (
                "screen-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                G_TYPE_NONE, 4, G_TYPE_UINT, G_TYPE_UINT, G_TYPE_UINT, G_TYPE_UINT);
        signals[SIGNAL_CLOSED] =
                g_signal_new ("closed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                              NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
        rfbClientLog = log_debug;
        rfbClientErr = log_error;
}

CorralVnc *
corral_vnc_new (void)
{
        return g_object_new (CORRAL_TYPE_VNC, NULL);
}

void
corral_vnc_connect_fd_async (CorralVnc *self,
                             int fd,
                             GCancellable *cancellable,
                             GAsyncReadyCallback callback,
                             gpointer user_data)
{
        g_autoptr (GTask) task = g_task_new (self, cancellable, callback, user_data);
        g_autoptr (GError) error = NULL;
        g_autoptr (GThread) thread = NULL;
        Conn *c;

        g_return_if_fail (CORRAL_IS_VNC (self));
        g_task_set_source_tag (task, corral_vnc_connect_fd_async);
        if (self->conn) {
                conn_stop (self->conn);
                g_clear_pointer (&self->conn, conn_unref);
                self->connected = FALSE;
        }
        if (!g_unix_set_fd_nonblocking (fd, TRUE, &error)) {
                close (fd);
                g_task_return_error (task, g_steal_pointer (&error));
                return;
        }
        c = g_new0 (Conn, 1);
        g_atomic_ref_count_init (&c->ref);
        g_mutex_init (&c->lock);
        g_queue_init (&c->input);
        c->shared = shared_ref (self->shared);
        c->sock = fd;
        c->wake[0] = c->wake[1] = -1;
        if (pipe2 (c->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
                int saved = errno;

                close (fd);
                conn_unref (c);
                g_task_return_new_error (task, G_IO_ERROR, g_io_error_from_errno (saved),
                                         "pipe2: %s", g_strerror (saved));
                return;
        }
        g_task_set_task_data (task, conn_ref (c), (GDestroyNotify) conn_unref);
        c->connect_task = g_object_ref (task);
        self->conn = conn_ref (c); /* ours; the thread has the first */
        thread = g_thread_try_new ("corral-vnc", conn_thread, c, &error);
        if (!thread) {
                g_clear_object (&c->connect_task);
                g_clear_pointer (&self->conn, conn_unref);
                close (fd);
                conn_unref (c);
                g_task_return_error (task, g_steal_pointer (&error));
        }
}

void
corral_vnc_connect_async (CorralVnc *self,
                          const char *path,
                          GCancellable *cancellable,
                          GAsyncReadyCallback callback,
                          gpointer user_data)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        int fd;

        g_return_if_fail (CORRAL_IS_VNC (self));
        g_return_if_fail (path != NULL);
        if (strlen (path) >= sizeof addr.sun_path) {
                g_task_report_new_error (self, callback, user_data, corral_vnc_connect_async,
                                         G_IO_ERROR, G_IO_ERROR_FILENAME_TOO_LONG,
                                         _ ("The VM’s screen socket path is too long: %s"), path);
                return;
        }
        strcpy (addr.sun_path, path);
        if (self->path != path) {
                g_free (self->path);
                self->path = g_strdup (path);
        }
        fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect (fd, (struct sockaddr *) &addr, sizeof addr) < 0) {
                int saved = errno;

                if (fd >= 0)
                        close (fd);
                g_task_report_new_error (self, callback, user_data, corral_vnc_connect_async,
                                         G_IO_ERROR, g_io_error_from_errno (saved),
                                         _ ("Cannot reach the VM’s screen at %s: %s"), path,
                                         g_strerror (saved));
                return;
        }
        corral_vnc_connect_fd_async (self, fd, cancellable, callback, user_data);
}

gboolean
corral_vnc_connect_finish (CorralVnc *self, GAsyncResult *result, GError **error)
{
        Conn *c = g_task_get_task_data (G_TASK (result));

        g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
        if (!g_task_propagate_boolean (G_TASK (result), error)) {
                if (c && self->conn == c)
                        g_clear_pointer (&self->conn, conn_unref);
                return FALSE;
        }
        /* Connected, unless closed or replaced meanwhile. */
        if (self->conn && !self->connected && !conn_stopping (self->conn)) {
                self->connected = TRUE;
                g_object_notify_by_pspec (G_OBJECT (self), props[PROP_CONNECTED]);
        }
        return TRUE;
}

void
corral_vnc_close (CorralVnc *self)
{
        g_return_if_fail (CORRAL_IS_VNC (self));
        if (!self->conn)
                return;
        conn_stop (self->conn);
        g_clear_pointer (&self->conn, conn_unref);
        if (self->connected) {
                self->connected = FALSE;
                g_object_notify_by_pspec (G_OBJECT (self), props[PROP_CONNECTED]);
        }
}

gboolean
corral_vnc_is_connected (CorralVnc *self)
{
        g_return_val_if_fail (CORRAL_IS_VNC (self), FALSE);
        return self->connected;
}

guint
corral_vnc_get_width (CorralVnc *self)
{
        guint w;

        g_mutex_lock (&self->shared->lock);
        w = self->shared->width;
        g_mutex_unlock (&self->shared->lock);
        return w;
}

guint
corral_vnc_get_height (CorralVnc *self)
{
        guint h;

        g_mutex_lock (&self->shared->lock);
        h = self->shared->height;
        g_mutex_unlock (&self->shared->lock);
        return h;
}

GBytes *
corral_vnc_snapshot (CorralVnc *self, guint *width, guint *height)
{
        Shared *s = self->shared;
        GBytes *bytes = NULL;

        g_mutex_lock (&s->lock);
        if (s->screen) {
                bytes = g_bytes_new (s->screen, (gsize) s->width * s->height * 4);
                *width = s->width;
                *height = s->height;
        }
        g_mutex_unlock (&s->lock);
        return bytes;
}

guint64
corral_vnc_get_update_count (CorralVnc *self)
{
        guint64 n;

        g_mutex_lock (&self->shared->lock);
        n = self->shared->updates;
        g_mutex_unlock (&self->shared->lock);
        return n;
}

gint64
corral_vnc_get_last_update_time (CorralVnc *self)
{
        gint64 t;

        g_mutex_lock (&self->shared->lock);
        t = self->shared->last_update;
        g_mutex_unlock (&self->shared->lock);
        return t;
}

static void
queue_input (CorralVnc *self, Input *in)
{
        char byte = 1;

        if (!self->conn) {
                g_free (in);
                return;
        }
        g_mutex_lock (&self->conn->lock);
        g_queue_push_tail (&self->conn->input, in);
        g_mutex_unlock (&self->conn->lock);
        if (write (self->conn->wake[1], &byte, 1) < 0 && errno != EAGAIN)
                g_debug ("wake: %s", g_strerror (errno));
}

void
corral_vnc_pointer (CorralVnc *self, guint x, guint y, guint buttons)
{
        Input *in = g_new0 (Input, 1);

        g_return_if_fail (CORRAL_IS_VNC (self));
        in->kind = INPUT_POINTER;
        in->x = x;
        in->y = y;
        in->buttons = buttons & 0x7f;
        queue_input (self, in);
}

void
corral_vnc_key (CorralVnc *self, guint32 keysym, guint scancode, gboolean down)
{
        Input *in = g_new0 (Input, 1);

        g_return_if_fail (CORRAL_IS_VNC (self));
        in->kind = INPUT_KEY;
        in->keysym = keysym;
        /* An XT scancode is 7 bits, with bit 7 for the E0-prefixed keys. */
        in->scancode = scancode & 0xff;
        in->down = down;
        queue_input (self, in);
}

/* Linux evdev codes past 83 (the first 83 are the XT codes themselves), as XT scancodes. */
static const struct {
        guint16 evdev;
        guint8 xt;
} evdev_xt[] = {
        { 86, 0x56 },  { 87, 0x57 },  { 88, 0x58 },  { 96, 0x9c },  { 97, 0x9d },  { 98, 0xb5 },
        { 99, 0xb7 },  { 100, 0xb8 }, { 102, 0xc7 }, { 103, 0xc8 }, { 104, 0xc9 }, { 105, 0xcb },
        { 106, 0xcd }, { 107, 0xcf }, { 108, 0xd0 }, { 109, 0xd1 }, { 110, 0xd2 }, { 111, 0xd3 },
        { 117, 0x59 }, { 119, 0xc6 }, { 125, 0xdb }, { 126, 0xdc }, { 127, 0xdd },
};

guint
corral_vnc_scancode_from_evdev (guint evdev)
{
        if (evdev >= 1 && evdev <= 83)
                return evdev;
        for (gsize i = 0; i < G_N_ELEMENTS (evdev_xt); i++) {
                if (evdev_xt[i].evdev == evdev)
                        return evdev_xt[i].xt;
        }
        return 0;
}

const char *
corral_vnc_get_path (CorralVnc *self)
{
        g_return_val_if_fail (CORRAL_IS_VNC (self), NULL);
        return self->path;
}
