/* test-outq.c — the guest programs' frame queue (util/corral-outq.h): partial writes keep their
 * place, a session's end keeps only a partly written frame, the byte count stays exact.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corral-outq.h"

static uint8_t *
frame (guint8 fill, size_t len)
{
        uint8_t *buf = malloc (len);

        g_assert_nonnull (buf);
        memset (buf, fill, len);
        return buf;
}

/* Reads everything the pipe holds; returns how many bytes, checking they are fill. */
static size_t
drain (int fd, guint8 fill)
{
        uint8_t buf[8192];
        size_t total = 0;
        ssize_t n;

        while ((n = read (fd, buf, sizeof buf)) > 0) {
                for (ssize_t i = 0; i < n; i++)
                        g_assert_cmpuint (buf[i], ==, fill);
                total += (size_t) n;
        }
        return total;
}

static void
test_partial_write_and_drop (void)
{
        CorralOutq q = { 0 };
        int p[2];
        size_t pipe_size, first;

        g_assert_cmpint (pipe2 (p, O_NONBLOCK | O_CLOEXEC), ==, 0);
        g_assert_cmpint (fcntl (p[1], F_SETPIPE_SZ, 4096), >=, 4096);
        pipe_size = (size_t) fcntl (p[1], F_GETPIPE_SZ);
        first = pipe_size + 1000;
        g_assert_cmpint (corral_outq_push (&q, frame ('a', first), first), ==, 0);
        g_assert_cmpint (corral_outq_push (&q, frame ('b', 500), 500), ==, 0);
        g_assert_cmpint (corral_outq_push (&q, frame ('c', 700), 700), ==, 0);
        g_assert_cmpuint (q.bytes, ==, first + 1200);

        /* The pipe takes part of the first frame: the rest waits, at its offset. */
        g_assert_cmpint (corral_outq_write (&q, p[1]), ==, 0);
        g_assert_cmpuint (q.head_off, ==, pipe_size);
        g_assert_cmpuint (drain (p[0], 'a'), ==, pipe_size);

        /* The session ends: the half-sent frame is kept, the rest goes. */
        corral_outq_drop_pending (&q);
        g_assert_cmpuint (q.bytes, ==, first);
        g_assert_true (q.head == q.tail);
        g_assert_cmpint (corral_outq_write (&q, p[1]), ==, 0);
        g_assert_true (corral_outq_empty (&q));
        g_assert_cmpuint (q.bytes, ==, 0);
        g_assert_cmpuint (drain (p[0], 'a'), ==, 1000);

        /* Nothing written yet: dropping leaves nothing at all. */
        g_assert_cmpint (corral_outq_push (&q, frame ('d', 10), 10), ==, 0);
        corral_outq_drop_pending (&q);
        g_assert_true (corral_outq_empty (&q));
        g_assert_cmpuint (q.bytes, ==, 0);

        /* A broken connection is an error, not a loss of count. */
        g_assert_cmpint (corral_outq_push (&q, frame ('e', 10), 10), ==, 0);
        close (p[0]);
        g_assert_cmpint (corral_outq_write (&q, p[1]), ==, -EPIPE);
        g_assert_cmpuint (q.bytes, ==, 10);
        corral_outq_clear (&q);
        g_assert_true (corral_outq_empty (&q));
        g_assert_cmpuint (q.bytes, ==, 0);
        close (p[1]);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        /* A closed reader must come back as -EPIPE, not end the test. */
        signal (SIGPIPE, SIG_IGN);
        g_test_add_func ("/outq/partial-write-and-drop", test_partial_write_and_drop);
        return g_test_run ();
}
