/* test-vnc.c — the VM screen's VNC client (vmm/corral-vnc.c) against a scripted RFB server that
 * behaves as a hostile guest could make QEMU's look: a screen that claims to be enormous, a
 * rectangle outside the screen, encodings nobody asked for, clipboard text that claims 4 GiB,
 * a server that stops in the middle of a message, and random bytes. The client must end the
 * connection with a reason, never crash or allocate what it was told to (run under ASan by
 * tools/test), and the well-behaved server's picture and the input sent to it must be exact.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <gio/gio.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "corral-vnc.h"

typedef struct Server Server;
typedef void (*Script) (Server *s);

struct Server {
        int fd;
        guint16 width, height;
        const char *version;
        Script script;
        guint32 seed;
        GMutex lock;
        GArray *events; /* Event, recorded from the client's messages */
        gboolean eof; /* the client closed its end */
        GThread *thread;
};

typedef struct {
        guint8 type; /* 4 key, 5 pointer */
        guint32 a, b, c;
} Event;

static gboolean
write_all (int fd, const void *buf, gsize n)
{
        const guint8 *p = buf;

        while (n) {
                ssize_t w = send (fd, p, n, MSG_NOSIGNAL);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return FALSE;
                p += w;
                n -= w;
        }
        return TRUE;
}

static gboolean
read_all (int fd, void *buf, gsize n)
{
        guint8 *p = buf;

        while (n) {
                ssize_t r = read (fd, p, n);

                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return FALSE;
                p += r;
                n -= r;
        }
        return TRUE;
}

static void
put16 (guint8 *p, guint16 v)
{
        p[0] = v >> 8;
        p[1] = v & 0xff;
}

static void
put32 (guint8 *p, guint32 v)
{
        p[0] = v >> 24;
        p[1] = (v >> 16) & 0xff;
        p[2] = (v >> 8) & 0xff;
        p[3] = v & 0xff;
}

static guint32
get32 (const guint8 *p)
{
        return (guint32) p[0] << 24 | (guint32) p[1] << 16 | (guint32) p[2] << 8 | p[3];
}

/* RFB 3.8 up to ServerInit, the pixel format the client asks for (32 bits, R G B X). */
static gboolean
handshake (Server *s)
{
        guint8 version[12], choice, shared, init[24 + 6];
        guint8 types[] = { 1, 1 }; /* one type: None */
        guint8 ok[4] = { 0 };

        if (!write_all (s->fd, s->version, strlen (s->version)) ||
            !read_all (s->fd, version, sizeof version) || !write_all (s->fd, types, 2) ||
            !read_all (s->fd, &choice, 1) || !write_all (s->fd, ok, 4) ||
            !read_all (s->fd, &shared, 1))
                return FALSE;
        memset (init, 0, sizeof init);
        put16 (init, s->width);
        put16 (init + 2, s->height);
        init[4] = 32; /* bits per pixel */
        init[5] = 24; /* depth */
        init[6] = 0; /* little endian */
        init[7] = 1; /* true colour */
        put16 (init + 8, 255);
        put16 (init + 10, 255);
        put16 (init + 12, 255);
        init[14] = 0;
        init[15] = 8;
        init[16] = 16;
        put32 (init + 20, 6);
        memcpy (init + 24, "corral", 6);
        return write_all (s->fd, init, sizeof init);
}

/* One message from the client, recorded when it is input; FALSE at its end or on nonsense. */
static gboolean
read_message (Server *s)
{
        guint8 type, buf[32];

        if (!read_all (s->fd, &type, 1))
                return FALSE;
        switch (type) {
        case 0: /* SetPixelFormat */
                return read_all (s->fd, buf, 19);
        case 2: { /* SetEncodings */
                guint16 n;

                if (!read_all (s->fd, buf, 3))
                        return FALSE;
                n = (guint16) (buf[1] << 8 | buf[2]);
                for (guint i = 0; i < n; i++)
                        if (!read_all (s->fd, buf, 4))
                                return FALSE;
                return TRUE;
        }
        case 3: /* FramebufferUpdateRequest */
                return read_all (s->fd, buf, 9);
        case 4: { /* KeyEvent */
                Event e = { 4 };

                if (!read_all (s->fd, buf, 7))
                        return FALSE;
                e.a = get32 (buf + 3);
                e.b = buf[0];
                g_mutex_lock (&s->lock);
                g_array_append_val (s->events, e);
                g_mutex_unlock (&s->lock);
                return TRUE;
        }
        case 5: { /* PointerEvent */
                Event e = { 5 };

                if (!read_all (s->fd, buf, 5))
                        return FALSE;
                e.a = buf[1] << 8 | buf[2];
                e.b = buf[3] << 8 | buf[4];
                e.c = buf[0];
                g_mutex_lock (&s->lock);
                g_array_append_val (s->events, e);
                g_mutex_unlock (&s->lock);
                return TRUE;
        }
        case 6: { /* ClientCutText */
                guint32 n;

                if (!read_all (s->fd, buf, 7))
                        return FALSE;
                n = get32 (buf + 3);
                for (guint32 i = 0; i < n; i++)
                        if (!read_all (s->fd, buf, 1))
                                return FALSE;
                return TRUE;
        }
        default:
                g_test_message ("server: client message type %u", type);
                return FALSE;
        }
}

/* Reads (and records) what the client sends until it closes its end. */
static void
drain (Server *s)
{
        while (read_message (s))
                ;
        g_mutex_lock (&s->lock);
        s->eof = TRUE;
        g_mutex_unlock (&s->lock);
}

/* A FramebufferUpdate header and one rectangle header. */
static gboolean
send_rect_header (Server *s, guint16 x, guint16 y, guint16 w, guint16 h, gint32 encoding)
{
        guint8 m[4 + 12] = { 0 };

        put16 (m + 2, 1);
        put16 (m + 4, x);
        put16 (m + 6, y);
        put16 (m + 8, w);
        put16 (m + 10, h);
        put32 (m + 12, (guint32) encoding);
        return write_all (s->fd, m, sizeof m);
}

/* A raw rectangle of one colour. */
static gboolean
send_raw_rect (Server *s, guint16 x, guint16 y, guint16 w, guint16 h, guint8 r, guint8 g, guint8 b)
{
        g_autofree guint8 *pixels = g_malloc ((gsize) w * h * 4);

        for (gsize i = 0; i < (gsize) w * h; i++) {
                pixels[i * 4] = r;
                pixels[i * 4 + 1] = g;
                pixels[i * 4 + 2] = b;
                pixels[i * 4 + 3] = 0;
        }
        return send_rect_header (s, x, y, w, h, 0) && write_all (s->fd, pixels, (gsize) w * h * 4);
}

static gpointer
server_thread (gpointer data)
{
        Server *s = data;

        if (handshake (s) && s->script)
                s->script (s);
        else
                drain (s);
        return NULL;
}

static Server *
server_start (guint16 width, guint16 height, Script script, int *client_fd)
{
        Server *s = g_new0 (Server, 1);
        int sv[2];

        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        s->fd = sv[0];
        *client_fd = sv[1];
        s->width = width;
        s->height = height;
        s->version = "RFB 003.008\n";
        s->script = script;
        g_mutex_init (&s->lock);
        s->events = g_array_new (FALSE, TRUE, sizeof (Event));
        return s;
}

static void
server_run (Server *s)
{
        s->thread = g_thread_new ("rfb-server", server_thread, s);
}

static void
server_free (Server *s)
{
        shutdown (s->fd, SHUT_RDWR);
        g_thread_join (s->thread);
        close (s->fd);
        g_array_unref (s->events);
        g_mutex_clear (&s->lock);
        g_free (s);
}

/* The client side ---------------------------------------------------------------------- */

typedef struct {
        gboolean done;
        gboolean ok;
        GError *error;
        gboolean closed;
        char *reason;
        guint changes;
} Watch;

static void
on_connected (GObject *src, GAsyncResult *res, gpointer data)
{
        Watch *w = data;

        w->ok = corral_vnc_connect_finish (CORRAL_VNC (src), res, &w->error);
        w->done = TRUE;
}

static void
on_closed (CorralVnc *vnc, const char *reason, gpointer data)
{
        Watch *w = data;

        w->closed = TRUE;
        w->reason = g_strdup (reason);
}

static void
on_changed (CorralVnc *vnc, guint x, guint y, guint width, guint height, gpointer data)
{
        Watch *w = data;

        g_assert_cmpuint (x + width, <=, corral_vnc_get_width (vnc));
        g_assert_cmpuint (y + height, <=, corral_vnc_get_height (vnc));
        w->changes++;
}

static gboolean
timed_out (gpointer data)
{
        *(gboolean *) data = TRUE;
        return G_SOURCE_REMOVE;
}

/* Runs the main context until *flag or seconds pass; whether *flag came. */
static gboolean
wait_for (gboolean *flag, guint seconds)
{
        gboolean late = FALSE;
        guint id = g_timeout_add_seconds (seconds, timed_out, &late);

        while (!*flag && !late)
                g_main_context_iteration (NULL, TRUE);
        if (!late)
                g_source_remove (id);
        return *flag;
}

static CorralVnc *
connect_to (Server *s, int fd, Watch *w)
{
        CorralVnc *vnc = corral_vnc_new ();

        g_signal_connect (vnc, "closed", G_CALLBACK (on_closed), w);
        g_signal_connect (vnc, "screen-changed", G_CALLBACK (on_changed), w);
        server_run (s);
        corral_vnc_connect_fd_async (vnc, fd, NULL, on_connected, w);
        g_assert_true (wait_for (&w->done, 30));
        return vnc;
}

static void
watch_clear (Watch *w)
{
        g_clear_error (&w->error);
        g_clear_pointer (&w->reason, g_free);
}

/* Lets a closing connection's thread finish, so that nothing is left for leak checkers. */
static void
settle (void)
{
        for (guint i = 0; i < 50; i++) {
                while (g_main_context_iteration (NULL, FALSE))
                        ;
                g_usleep (10000);
        }
}

/* The honest server: a red rectangle; then input is recorded. */
static void
script_honest (Server *s)
{
        /* The client's first messages come first; then the picture. */
        for (guint i = 0; i < 3; i++)
                if (!read_message (s))
                        return;
        if (send_raw_rect (s, 8, 4, 16, 8, 255, 0, 0))
                drain (s);
}

static guint
events_seen (Server *s)
{
        guint n;

        g_mutex_lock (&s->lock);
        n = s->events->len;
        g_mutex_unlock (&s->lock);
        return n;
}

static void
test_honest (void)
{
        Watch w = { 0 };
        int fd;
        Server *s = server_start (64, 48, script_honest, &fd);
        g_autoptr (CorralVnc) vnc = connect_to (s, fd, &w);
        g_autoptr (GBytes) shot = NULL;
        const guint8 *px;
        guint width = 0, height = 0;
        gint64 start;

        g_assert_no_error (w.error);
        g_assert_true (w.ok);
        g_assert_true (corral_vnc_is_connected (vnc));
        g_assert_cmpuint (corral_vnc_get_width (vnc), ==, 64);
        g_assert_cmpuint (corral_vnc_get_height (vnc), ==, 48);
        start = g_get_monotonic_time ();
        while (corral_vnc_get_update_count (vnc) == 0 &&
               g_get_monotonic_time () - start < 30 * G_USEC_PER_SEC)
                g_main_context_iteration (NULL, FALSE);
        g_assert_cmpuint (corral_vnc_get_update_count (vnc), >=, 1);
        g_assert_cmpint (corral_vnc_get_last_update_time (vnc), >, 0);
        shot = corral_vnc_snapshot (vnc, &width, &height);
        g_assert_cmpuint (width, ==, 64);
        g_assert_cmpuint (g_bytes_get_size (shot), ==, 64 * 48 * 4);
        px = g_bytes_get_data (shot, NULL);
        /* Inside the rectangle: red and opaque; outside: black and opaque. */
        g_assert_cmpuint (px[(5 * 64 + 10) * 4], ==, 255);
        g_assert_cmpuint (px[(5 * 64 + 10) * 4 + 1], ==, 0);
        g_assert_cmpuint (px[(5 * 64 + 10) * 4 + 3], ==, 255);
        g_assert_cmpuint (px[(40 * 64 + 60) * 4], ==, 0);
        g_assert_cmpuint (px[(40 * 64 + 60) * 4 + 3], ==, 255);

        /* Input arrives in order; a point off the screen is pulled onto its edge. */
        corral_vnc_pointer (vnc, 10, 5, CORRAL_VNC_BUTTON_LEFT);
        corral_vnc_pointer (vnc, 10, 5, 0);
        corral_vnc_key (vnc, 0x40 /* at */, 0x03, TRUE);
        corral_vnc_key (vnc, 0x40, 0x03, FALSE);
        corral_vnc_pointer (vnc, 9999, 9999, CORRAL_VNC_BUTTON_WHEEL_DOWN);
        start = g_get_monotonic_time ();
        while (events_seen (s) < 5 && g_get_monotonic_time () - start < 30 * G_USEC_PER_SEC)
                g_main_context_iteration (NULL, FALSE);
        g_assert_cmpuint (events_seen (s), ==, 5);
        {
                const Event *e = (const Event *) s->events->data;

                g_assert_cmpuint (e[0].type, ==, 5);
                g_assert_cmpuint (e[0].a, ==, 10);
                g_assert_cmpuint (e[0].b, ==, 5);
                g_assert_cmpuint (e[0].c, ==, 1);
                g_assert_cmpuint (e[1].c, ==, 0);
                g_assert_cmpuint (e[2].type, ==, 4);
                g_assert_cmpuint (e[2].a, ==, 0x40);
                g_assert_cmpuint (e[2].b, ==, 1);
                g_assert_cmpuint (e[3].b, ==, 0);
                g_assert_cmpuint (e[4].a, ==, 63);
                g_assert_cmpuint (e[4].b, ==, 47);
                g_assert_cmpuint (e[4].c, ==, CORRAL_VNC_BUTTON_WHEEL_DOWN);
        }
        /* Closing is not a failure: no reason. */
        corral_vnc_close (vnc);
        g_assert_false (corral_vnc_is_connected (vnc));
        server_free (s);
        settle ();
        g_assert_false (w.closed);
        /* The last picture stays readable. */
        g_bytes_unref (shot);
        shot = corral_vnc_snapshot (vnc, &width, &height);
        g_assert_nonnull (shot);
        watch_clear (&w);
}

/* Hostile servers: each ends the connection, with a reason ----------------------------- */

static void
script_rect_outside (Server *s)
{
        for (guint i = 0; i < 3; i++)
                if (!read_message (s))
                        return;
        /* 100 pixels wide from x = 60 on a 64-pixel screen; the pixels are all there. */
        if (send_raw_rect (s, 60, 0, 100, 10, 1, 2, 3))
                drain (s);
}

static void
script_bogus_encoding (Server *s)
{
        guint8 junk[4096];

        for (guint i = 0; i < 3; i++)
                if (!read_message (s))
                        return;
        memset (junk, 0x41, sizeof junk);
        if (send_rect_header (s, 0, 0, 8, 8, 0x12345678) && write_all (s->fd, junk, sizeof junk))
                drain (s);
}

static void
script_huge_resize (Server *s)
{
        for (guint i = 0; i < 3; i++)
                if (!read_message (s))
                        return;
        /* DesktopSize (-223): a 60000 x 60000 screen would be 13 GiB. */
        if (send_rect_header (s, 0, 0, 60000, 60000, -223))
                drain (s);
}

static void
script_huge_cut_text (Server *s)
{
        guint8 m[8] = { 3, 0, 0, 0 };

        for (guint i = 0; i < 3; i++)
                if (!read_message (s))
                        return;
        /* ServerCutText claiming nearly 4 GiB; then the server closes. */
        put32 (m + 4, 0xfffffff0u);
        write_all (s->fd, m, sizeof m);
        write_all (s->fd, "abcdefgh", 8);
        shutdown (s->fd, SHUT_WR);
        drain (s);
}

static void
script_stall (Server *s)
{
        guint8 half[2] = { 0, 0 };

        for (guint i = 0; i < 3; i++)
                if (!read_message (s))
                        return;
        /* Half a FramebufferUpdate header, then nothing: the client gives up on its own. */
        write_all (s->fd, half, sizeof half);
        drain (s);
}

static void
script_random (Server *s)
{
        GRand *rand = g_rand_new_with_seed (s->seed);
        guint n = g_rand_int_range (rand, 1, 4096);
        g_autofree guint8 *bytes = g_malloc (n);

        for (guint i = 0; i < 3; i++)
                if (!read_message (s))
                        goto out;
        for (guint i = 0; i < n; i++)
                bytes[i] = g_rand_int (rand) & 0xff;
        /* Often a message type the client knows, so that it reads further. */
        bytes[0] = g_rand_int_range (rand, 0, 4);
        write_all (s->fd, bytes, n);
        shutdown (s->fd, SHUT_WR);
        drain (s);
out:
        g_rand_free (rand);
}

static void
expect_closed (guint16 width, guint16 height, Script script, guint seconds, const char *said)
{
        Watch w = { 0 };
        int fd;
        Server *s = server_start (width, height, script, &fd);
        g_autoptr (CorralVnc) vnc = connect_to (s, fd, &w);

        g_assert_no_error (w.error);
        g_assert_true (wait_for (&w.closed, seconds));
        g_test_message ("closed: %s", w.reason);
        g_assert_nonnull (w.reason);
        if (said)
                g_assert_nonnull (strstr (w.reason, said));
        g_assert_false (corral_vnc_is_connected (vnc));
        server_free (s);
        watch_clear (&w);
        settle ();
}

static void
test_rect_outside (void)
{
        expect_closed (64, 48, script_rect_outside, 30, NULL);
}

static void
test_bogus_encoding (void)
{
        expect_closed (64, 48, script_bogus_encoding, 30, NULL);
}

static void
test_huge_resize (void)
{
        expect_closed (64, 48, script_huge_resize, 30, "60000 × 60000");
}

static void
test_stall (void)
{
        gint64 start = g_get_monotonic_time ();

        expect_closed (64, 48, script_stall, 60, NULL);
        /* Given up within a few seconds of the timeout, not hung. */
        g_assert_cmpint (g_get_monotonic_time () - start, <,
                         (CORRAL_VNC_READ_TIMEOUT_S + 20) * G_USEC_PER_SEC);
}

/* Clipboard text that claims 4 GiB is not allocated; the connection ends when the server goes. */
static void
test_huge_cut_text (void)
{
        expect_closed (64, 48, script_huge_cut_text, 30, NULL);
}

/* A screen too large to hold is refused before anything is allocated for it. */
static void
test_huge_screen (void)
{
        Watch w = { 0 };
        int fd;
        Server *s = server_start (65535, 65535, NULL, &fd);
        g_autoptr (CorralVnc) vnc = connect_to (s, fd, &w);

        g_assert_false (w.ok);
        g_assert_error (w.error, G_IO_ERROR, G_IO_ERROR_FAILED);
        g_assert_nonnull (strstr (w.error->message, "65535 × 65535"));
        g_assert_false (corral_vnc_is_connected (vnc));
        server_free (s);
        watch_clear (&w);
        settle ();
}

/* Not a VNC server at all, and one that says its version and then nothing. */
static void
test_not_vnc (void)
{
        static const char *const versions[] = { "HTTP/1.1 200 OK\r\n\r\n", "RFB 003.008\n" };

        for (gsize i = 0; i < G_N_ELEMENTS (versions); i++) {
                Watch w = { 0 };
                int fd;
                Server *s = server_start (64, 48, NULL, &fd);
                g_autoptr (CorralVnc) vnc = NULL;

                s->version = versions[i];
                if (i == 1) {
                        /* The version, then silence: the server never reads the client's. */
                        g_assert_cmpint (write (s->fd, versions[i], 12), ==, 12);
                        s->version = "";
                        s->script = NULL;
                }
                vnc = corral_vnc_new ();
                if (i == 0)
                        server_run (s);
                corral_vnc_connect_fd_async (vnc, fd, NULL, on_connected, &w);
                g_assert_true (wait_for (&w.done, 60));
                g_test_message ("%s", w.error ? w.error->message : "(connected)");
                g_assert_false (w.ok);
                g_assert_nonnull (w.error);
                if (i == 1) {
                        shutdown (s->fd, SHUT_RDWR);
                        close (s->fd);
                        g_array_unref (s->events);
                        g_mutex_clear (&s->lock);
                        g_free (s);
                } else {
                        server_free (s);
                }
                watch_clear (&w);
                settle ();
        }
}

/* Closing while the server stalls mid-message ends the connection at once. */
static void
test_close_while_stalled (void)
{
        Watch w = { 0 };
        int fd;
        Server *s = server_start (64, 48, script_stall, &fd);
        g_autoptr (CorralVnc) vnc = connect_to (s, fd, &w);
        gint64 start;
        gboolean eof = FALSE;

        g_assert_true (w.ok);
        g_usleep (300000);
        start = g_get_monotonic_time ();
        corral_vnc_close (vnc);
        while (!eof && g_get_monotonic_time () - start < 3 * G_USEC_PER_SEC) {
                g_usleep (10000);
                g_mutex_lock (&s->lock);
                eof = s->eof;
                g_mutex_unlock (&s->lock);
        }
        g_assert_true (eof);
        server_free (s);
        settle ();
        g_assert_false (w.closed);
        watch_clear (&w);
}

static void
test_random (void)
{
        for (guint32 seed = 1; seed <= 40; seed++) {
                Watch w = { 0 };
                int fd;
                Server *s = server_start (64, 48, script_random, &fd);
                g_autoptr (CorralVnc) vnc = NULL;

                s->seed = seed ^ g_test_rand_int ();
                vnc = connect_to (s, fd, &w);
                g_assert_true (w.ok);
                /* Whatever the bytes did, the server's end closes the connection. */
                g_assert_true (wait_for (&w.closed, 30));
                g_assert_nonnull (w.reason);
                server_free (s);
                watch_clear (&w);
                settle ();
        }
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/vnc/honest", test_honest);
        g_test_add_func ("/vnc/hostile/rect-outside", test_rect_outside);
        g_test_add_func ("/vnc/hostile/bogus-encoding", test_bogus_encoding);
        g_test_add_func ("/vnc/hostile/huge-screen", test_huge_screen);
        g_test_add_func ("/vnc/hostile/huge-resize", test_huge_resize);
        g_test_add_func ("/vnc/hostile/huge-cut-text", test_huge_cut_text);
        g_test_add_func ("/vnc/hostile/stall", test_stall);
        g_test_add_func ("/vnc/hostile/not-vnc", test_not_vnc);
        g_test_add_func ("/vnc/hostile/random", test_random);
        g_test_add_func ("/vnc/close-while-stalled", test_close_while_stalled);
        return g_test_run ();
}
