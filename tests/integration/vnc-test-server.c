/* vnc-test-server.c — see vnc-test-server.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "vnc-test-server.h"

#include <rfb/rfb.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct {
        rfbScreenInfoPtr screen;
        GThread *thread;
        GMutex lock;
        GArray *events;
        gboolean stop;
        /* A click repaints the screen this long after it (a slow guest), in this colour. */
        guint repaint_delay_ms;
        guint32 repaint_colour;
        gint64 repaint_at;
        int listen_fd; /* -1, or a unix socket whose connections become clients */
        gint64 paint_at; /* the first picture is painted then (0: done) */
        gboolean drop; /* close every client at the next turn */
} Server;

static Server *server;
/* Whether the next server offers QEMU's extended key events (vnc_test_server_offer_...). */
static gboolean offer_extended_keys;
/* The next server's screen is black until this long after it starts (0: painted at once), as
 * QEMU's first answer to a client is when no one was watching (its copy is not made yet);
 * G_MAXUINT: black for good. */
static guint black_for_ms;

static void
on_key (rfbBool down, rfbKeySym keysym, rfbClientPtr cl)
{
        VncTestEvent e = { .type = 'k', .keysym = keysym, .down = down != 0 };

        g_mutex_lock (&server->lock);
        g_array_append_val (server->events, e);
        g_mutex_unlock (&server->lock);
}

static void
on_pointer (int buttons, int x, int y, rfbClientPtr cl)
{
        VncTestEvent e = { .type = 'p', .x = x, .y = y, .buttons = buttons };
        VncTestEvent *last;

        g_mutex_lock (&server->lock);
        last = server->events->len
                       ? &g_array_index (server->events, VncTestEvent, server->events->len - 1)
                       : NULL;
        /* A release of the left button repaints, later. */
        if (last && last->type == 'p' && (last->buttons & 1) && !(buttons & 1) &&
            server->repaint_delay_ms)
                server->repaint_at = g_get_monotonic_time () + server->repaint_delay_ms * 1000;
        g_array_append_val (server->events, e);
        g_mutex_unlock (&server->lock);
}

/* QEMU's extended key events, as QEMU's server does them: offered by acknowledging the client's
 * pseudo-encoding with an empty rectangle of that encoding, then taken as message 255/0. The
 * acknowledgement waits until LibVNCServer has sent its SupportedMessages (which QEMU does not
 * send): libvncclient takes that list whole, and it would forget the acknowledgement. */
enum { ACK_NONE, ACK_PENDING, ACK_SENT };

static rfbBool
on_enable_encoding (rfbClientPtr cl, void **data, int encoding)
{
        if ((guint32) encoding != rfbEncodingQemuExtendedKeyEvent || !offer_extended_keys)
                return FALSE;
        cl->clientData = GINT_TO_POINTER (ACK_PENDING);
        return TRUE;
}

static void
send_acks (void)
{
        rfbClientIteratorPtr it = rfbGetClientIterator (server->screen);
        rfbClientPtr cl;

        while ((cl = rfbClientIteratorNext (it))) {
                struct {
                        rfbFramebufferUpdateMsg msg;
                        rfbFramebufferUpdateRectHeader rect;
                } ack = { 0 };

                if (GPOINTER_TO_INT (cl->clientData) != ACK_PENDING || cl->enableSupportedMessages)
                        continue;
                ack.msg.type = rfbFramebufferUpdate;
                ack.msg.nRects = GUINT16_TO_BE (1);
                ack.rect.encoding = GUINT32_TO_BE (rfbEncodingQemuExtendedKeyEvent);
                G_STATIC_ASSERT (sizeof ack ==
                                 sz_rfbFramebufferUpdateMsg + sz_rfbFramebufferUpdateRectHeader);
                rfbWriteExact (cl, (char *) &ack, sizeof ack);
                cl->clientData = GINT_TO_POINTER (ACK_SENT);
        }
        rfbReleaseClientIterator (it);
}

static rfbBool
on_message (rfbClientPtr cl, void *data, const rfbClientToServerMsg *msg)
{
        guint8 rest[sz_rfbQemuExtendedKeyEventMsg - 1];
        VncTestEvent e = { .type = 'k' };

        if (msg->type != rfbQemuEvent || rfbReadExact (cl, (char *) rest, sizeof rest) != 1 ||
            rest[0] != 0 /* a key event */)
                return FALSE;
        e.down = (rest[1] << 8 | rest[2]) != 0;
        e.keysym = (guint32) rest[3] << 24 | rest[4] << 16 | rest[5] << 8 | rest[6];
        e.scancode = (guint32) rest[7] << 24 | rest[8] << 16 | rest[9] << 8 | rest[10];
        g_mutex_lock (&server->lock);
        g_array_append_val (server->events, e);
        g_mutex_unlock (&server->lock);
        return TRUE;
}

static int qemu_encodings[] = { (int) rfbEncodingQemuExtendedKeyEvent, 0 };
static rfbProtocolExtension qemu_extension = {
        .pseudoEncodings = qemu_encodings,
        .enablePseudoEncoding = on_enable_encoding,
        .handleMessage = on_message,
};

/* LibVNCServer (0.9.14) never frees a client's list of enabled extensions: freed here, as the
 * client goes (the entries hold no data of their own). */
static void
on_client_gone (rfbClientPtr cl)
{
        while (cl->extensions) {
                rfbExtensionData *next = cl->extensions->next;

                free (cl->extensions);
                cl->extensions = next;
        }
}

static enum rfbNewClientAction
on_new_client (rfbClientPtr cl)
{
        cl->clientGoneHook = on_client_gone;
        return RFB_CLIENT_ACCEPT;
}

void
vnc_test_server_black_for (guint ms)
{
        black_for_ms = ms;
}

void
vnc_test_server_offer_extended_keys (gboolean offer)
{
        offer_extended_keys = offer;
}

static void
fill (guint x0, guint y0, guint x1, guint y1, guint32 rgb)
{
        guint32 *fb = (guint32 *) server->screen->frameBuffer;

        for (guint y = y0; y < y1; y++)
                for (guint x = x0; x < x1; x++)
                        /* R G B X in memory (the server's default 32-bit format) */
                        fb[y * VNC_TEST_SCREEN_W + x] = GUINT32_TO_LE (
                                (rgb >> 16 & 0xff) | (rgb & 0xff00) | (rgb & 0xff) << 16);
        rfbMarkRectAsModified (server->screen, x0, y0, x1, y1);
}

/* The picture: grey, a blue square. */
static void
paint (Server *s)
{
        fill (0, 0, VNC_TEST_SCREEN_W, VNC_TEST_SCREEN_H, 0x808080);
        fill (960, 600, 1060, 700, 0x0000ff);
}

static gpointer
server_thread (gpointer data)
{
        while (TRUE) {
                gint64 at;
                gboolean drop;

                g_mutex_lock (&server->lock);
                if (server->stop) {
                        g_mutex_unlock (&server->lock);
                        break;
                }
                at = server->repaint_at;
                if (at && g_get_monotonic_time () >= at)
                        server->repaint_at = 0;
                drop = server->drop;
                server->drop = FALSE;
                g_mutex_unlock (&server->lock);
                if (server->paint_at && g_get_monotonic_time () >= server->paint_at) {
                        server->paint_at = 0;
                        paint (server);
                }
                if (at && g_get_monotonic_time () >= at)
                        fill (0, 0, VNC_TEST_SCREEN_W, VNC_TEST_SCREEN_H, server->repaint_colour);
                if (drop) {
                        rfbClientIteratorPtr it = rfbGetClientIterator (server->screen);
                        rfbClientPtr cl;

                        while ((cl = rfbClientIteratorNext (it)))
                                rfbCloseClient (cl);
                        rfbReleaseClientIterator (it);
                }
                if (server->listen_fd >= 0) {
                        int fd = accept4 (server->listen_fd, NULL, NULL, SOCK_CLOEXEC);

                        if (fd >= 0)
                                rfbNewClient (server->screen, fd);
                }
                rfbProcessEvents (server->screen, 5000);
                send_acks ();
        }
        return NULL;
}

static int start (int inetd_fd, int listen_fd);

int
vnc_test_server_start (void)
{
        int sv[2];

        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        start (sv[1], -1);
        return sv[0];
}

void
vnc_test_server_listen (const char *path)
{
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        g_assert_cmpint (fd, >=, 0);
        g_assert_cmpuint (strlen (path), <, sizeof addr.sun_path);
        strcpy (addr.sun_path, path);
        g_assert_cmpint (bind (fd, (struct sockaddr *) &addr, sizeof addr), ==, 0);
        g_assert_cmpint (listen (fd, 4), ==, 0);
        start (-1, fd);
}

void
vnc_test_server_drop_clients (void)
{
        g_mutex_lock (&server->lock);
        server->drop = TRUE;
        g_mutex_unlock (&server->lock);
}

static int
start (int inetd_fd, int listen_fd)
{
        int argc = 0;

        server = g_new0 (Server, 1);
        server->listen_fd = listen_fd;
        g_mutex_init (&server->lock);
        server->events = g_array_new (FALSE, TRUE, sizeof (VncTestEvent));
        server->screen = rfbGetScreen (&argc, NULL, VNC_TEST_SCREEN_W, VNC_TEST_SCREEN_H, 8, 3, 4);
        server->screen->frameBuffer = g_malloc0 ((gsize) VNC_TEST_SCREEN_W * VNC_TEST_SCREEN_H * 4);
        server->screen->inetdSock = inetd_fd;
        server->screen->autoPort = FALSE;
        server->screen->port = server->screen->ipv6port = 0;
        server->screen->kbdAddEvent = on_key;
        server->screen->ptrAddEvent = on_pointer;
        server->screen->newClientHook = on_new_client;
        server->screen->alwaysShared = TRUE;
        /* No cursor drawn into the picture: like QEMU's, the screen changes only when what it
         * shows does. */
        server->screen->cursor = NULL;
        rfbLogEnable (FALSE);
        rfbRegisterProtocolExtension (&qemu_extension);
        rfbInitServer (server->screen);
        if (black_for_ms == 0)
                paint (server);
        else if (black_for_ms != G_MAXUINT)
                server->paint_at = g_get_monotonic_time () + (gint64) black_for_ms * 1000;
        server->thread = g_thread_new ("vnc-server", server_thread, NULL);
        return 0;
}

void
vnc_test_server_stop (void)
{
        g_mutex_lock (&server->lock);
        server->stop = TRUE;
        g_mutex_unlock (&server->lock);
        g_thread_join (server->thread);
        if (server->listen_fd >= 0)
                close (server->listen_fd);
        rfbShutdownServer (server->screen, TRUE);
        g_free (server->screen->frameBuffer);
        rfbScreenCleanup (server->screen);
        g_array_unref (server->events);
        g_mutex_clear (&server->lock);
        g_clear_pointer (&server, g_free);
        offer_extended_keys = FALSE;
        black_for_ms = 0;
}

GArray *
vnc_test_server_take_events (void)
{
        GArray *events;

        g_mutex_lock (&server->lock);
        events = server->events;
        server->events = g_array_new (FALSE, TRUE, sizeof (VncTestEvent));
        g_mutex_unlock (&server->lock);
        return events;
}

guint
vnc_test_server_n_events (void)
{
        guint n;

        g_mutex_lock (&server->lock);
        n = server->events->len;
        g_mutex_unlock (&server->lock);
        return n;
}

void
vnc_test_server_repaint_on_click (guint delay_ms, guint32 rgb)
{
        g_mutex_lock (&server->lock);
        server->repaint_delay_ms = delay_ms;
        server->repaint_colour = rgb;
        g_mutex_unlock (&server->lock);
}

static void
on_connected (GObject *src, GAsyncResult *res, gpointer data)
{
        *(GAsyncResult **) data = g_object_ref (res);
}

CorralVnc *
vnc_test_server_connect (const char *path)
{
        CorralVnc *vnc = corral_vnc_new ();
        GAsyncResult *res = NULL;
        g_autoptr (GError) error = NULL;

        if (path) {
                vnc_test_server_listen (path);
                corral_vnc_connect_async (vnc, path, NULL, on_connected, &res);
        } else {
                corral_vnc_connect_fd_async (vnc, vnc_test_server_start (), NULL, on_connected,
                                             &res);
        }
        while (!res)
                g_main_context_iteration (NULL, TRUE);
        g_assert_true (corral_vnc_connect_finish (vnc, res, &error));
        g_assert_no_error (error);
        g_object_unref (res);
        /* The first full picture may come in several updates. */
        while (corral_vnc_get_update_count (vnc) == 0 ||
               g_get_monotonic_time () - corral_vnc_get_last_update_time (vnc) < 300000) {
                g_main_context_iteration (NULL, FALSE);
                g_usleep (5000);
        }
        return vnc;
}
